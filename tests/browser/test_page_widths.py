"""No annotator page is wider than its window: a task page of every rating HIT type fits a
390 px phone (also with Markdown instructions holding an example image and a table), and the
annotator's pages (available work, my work, a task) fit a 1,280 px window; so do the admin's
batch pages (list, batch, review, money, launch). A failure names the elements that stick
out."""
from decimal import Decimal

import pytest
from django.urls import reverse

from annotation.engine.services.batches import batch_create_from_rows, batch_set_status
from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.submissions import assignment_submit
from annotation.engine.services.workers import worker_for_user
from annotation.models import Assignment, Batch, Worker
from annotation.providers.services import worker_bonus
from tests.factories import make_batch, make_workers
from tests.support.homes import INLINE_ROWS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
LONG_WORD = "Pneumonoultramicroscopicsilicovolcanoconiosis" * 3  # a URL-like run, unbroken

# Elements whose right edge passes the window's (a table scrolling inside its own box is
# allowed: its wrapper is what is measured).
OVERFLOW = """(width) => {
  const out = [];
  for (const el of document.body.querySelectorAll('*')) {
    const box = el.getBoundingClientRect();
    if (box.width && box.right > width + 1 && !el.closest('.table-scroll')) {
      out.push(`${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}` +
               `${el.className && typeof el.className === 'string' ? '.' + el.className.split(' ').join('.') : ''}` +
               ` right=${Math.round(box.right)}`);
    }
  }
  return out.slice(0, 10);
}"""


def _batch(slug, live_server, *, long_text=False):
    row = dict(INLINE_ROWS[slug])
    row["image_urls"] = [f"{live_server.url}/static/judging/samples/{name}"
                         for name in ("shapes-4.png", "bars-2.png", "scene-3.png")]
    if long_text:  # worker-facing text that will not wrap on its own
        for key in ("instruction", "response_a", "response_text", "feedback_a"):
            if key in row:
                row[key] = f"{row[key]} {LONG_WORD}"
    batch = batch_create_from_rows(hit_type=slug, title=f"{slug} width", rows=[row, row],
                                   assignments_per_task=1, min_seconds=0)
    return batch_set_status(batch, Batch.Status.ACTIVE)


def _check_width(page, width):
    page.wait_for_load_state("load")
    scroll = page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= width, (page.url, scroll, page.evaluate(OVERFLOW, width))


@pytest.mark.parametrize("slug", list(INLINE_ROWS))
def test_a_task_page_fits_a_390_px_phone(page_for, alice, live_server, slug):
    batch = _batch(slug, live_server, long_text=True)
    page = page_for(alice, viewport=PHONE)
    page.goto(reverse("annotation:batch_next", args=[batch.uuid]))
    page.wait_for_selector("#hit-form")
    _check_width(page, PHONE["width"])
    page.click("button.compare-toggle")  # side by side must squeeze, not overflow
    _check_width(page, PHONE["width"])


def test_the_annotators_pages_fit_1280_px(page_for, alice, live_server):
    batches = [_batch(slug, live_server) for slug in INLINE_ROWS]
    me = worker_for_user(alice)
    done = task_claim_next(batch=batches[0], worker=me)
    assignment_submit(assignment=done, data={"choice": "A"})
    page = page_for(alice, viewport=DESKTOP)
    for url in (reverse("annotation:available"), reverse("annotation:my_work")):
        page.goto(url)
        _check_width(page, DESKTOP["width"])
    for batch in batches:
        page.goto(reverse("annotation:batch_next", args=[batch.uuid]))
        page.wait_for_selector("#hit-form")
        _check_width(page, DESKTOP["width"])
    page.goto(reverse("annotation:available"))
    _check_width(page, DESKTOP["width"])


def test_markdown_instructions_with_an_image_and_a_table_fit_a_390_px_phone(
        page_for, alice, live_server):
    batch = _batch("pairwise_ab", live_server)
    image = f"{live_server.url}/static/judging/samples/scene-3.png"
    table = "| " + " | ".join(f"column {i} {LONG_WORD}" for i in range(6)) + " |\n" + \
        "|---" * 6 + "|\n" + "| " + " | ".join("x" for _ in range(6)) + " |"
    Batch.objects.filter(pk=batch.pk).update(
        instructions=f"A good answer:\n\n![example]({image})\n\n{table}\n\n{LONG_WORD}")
    page = page_for(alice, viewport=PHONE)
    page.goto(reverse("annotation:batch_next", args=[batch.uuid]))
    page.wait_for_selector(".instructions img.example-image")
    _check_width(page, PHONE["width"])


def test_the_admins_batch_pages_fit_1280_px(page_for, admin):
    local = make_batch(3, n=2, budget=Decimal("20"))
    Batch.objects.filter(pk=local.pk).update(title=f"Local {LONG_WORD}"[:200])
    mturk = make_batch(1, n=1, provider="mturk", budget=Decimal("5"), activate=False)
    for worker in make_workers(2):
        Worker.objects.filter(pk=worker.pk).update(external_id=f"w-{LONG_WORD}"[:120]
                                                   + str(worker.pk))
        for _ in range(2):
            lease = task_claim_next(batch=local, worker=Worker.objects.get(pk=worker.pk))
            assignment_submit(assignment=lease, data={"choice": "A"})
    first = Assignment.objects.filter(batch=local).select_related("batch", "worker").first()
    Assignment.objects.filter(pk=first.pk).update(status="approved")
    first.status = "approved"
    worker_bonus(first, amount="0.25", reason=f"Careful work {LONG_WORD}")
    page = page_for(admin, viewport=DESKTOP)
    for url in (reverse("console:batches"), reverse("console:upload"),
                reverse("console:batch", args=[local.uuid]),
                reverse("console:review", args=[local.uuid]),
                reverse("console:money", args=[local.uuid]),
                reverse("console:money", args=[mturk.uuid]),
                reverse("console:launch", args=[mturk.uuid])):
        page.goto(url)
        _check_width(page, DESKTOP["width"])


def test_a_studys_dataset_page_fits_1280_px(page_for, admin):
    from annotation.models import Instance
    from judging.models import EvalModel
    from studies.selectors import study_default

    study = study_default()
    EvalModel.objects.create(name=LONG_WORD[:100], version=LONG_WORD[:100], study=study)
    Instance.objects.create(study=study, source=LONG_WORD[:32], instruction="Q?", stage="done")
    page = page_for(admin, viewport=DESKTOP)
    page.goto(reverse("studies:dataset", args=[study.slug]))
    _check_width(page, DESKTOP["width"])
