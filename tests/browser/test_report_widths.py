"""The analyst's pages fit their window: a finished report at 1,280 px has no element wider
than the window (its widest tables become one card per row, nothing scrolls inside a box
either), and the leaderboard does not scroll sideways on a 390 px phone. A failure names the
elements that stick out."""
import pytest
from django.urls import reverse

from agreement.services.reports import report_generate
from tests.agreement.study import build_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Every element whose box passes the window's right edge (or is wider than the window), even
# inside a scrolling wrapper; every <details> is opened first so hidden rows count too.
WIDER_THAN = """(width) => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const out = [];
  for (const el of document.body.querySelectorAll('*')) {
    const box = el.getBoundingClientRect();
    if (box.width && (box.right > width + 1 || box.width > width + 1 || el.scrollWidth > width + 1)) {
      out.push(`${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""}${el.className && typeof el.className === "string" ? "." + el.className.split(" ").join(".") : ""} width=${Math.round(box.width)} right=${Math.round(box.right)}`);
    }
  }
  return out;
}"""


@pytest.fixture
def study(transactional_db):
    return build_study()


def test_report_page_has_no_element_wider_than_1280_px(page_for, analyst, study):
    report = report_generate({"metrics": ["length", "bleu4"], "bootstrap_rounds": 20,
                              "seed": 0, "judge_families": {"J1": "fam1"}})
    page = page_for(analyst, viewport={"width": 1280, "height": 900})
    page.goto(reverse("agreement:report_detail", args=[report.uuid]))
    page.locator("#summary").wait_for()
    page.wait_for_load_state("load")
    # the 19-column accuracy table is there, as cards
    assert page.locator("#table-accuracy .row-card").count() >= 3
    wide = page.evaluate(WIDER_THAN, 1280)
    assert wide == [], "\n".join(wide)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    # HIT types by their titles, not their codes
    assert "(pairwise_ab)" not in page.locator("main").inner_text()


def test_leaderboard_does_not_scroll_sideways_at_390_px(page_for, analyst, study):
    page = page_for(analyst, viewport={"width": 390, "height": 844})
    page.goto(reverse("judging:leaderboard"))
    page.wait_for_load_state("load")
    scroll = page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= 390, (scroll, page.evaluate(WIDER_THAN, 390))
