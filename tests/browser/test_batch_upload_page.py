"""The batch upload page in real Chromium: a few lines of JS show the chosen HIT type's column
table (without JS all tables show), and each type's sample file downloads."""
import pytest
from django.urls import reverse

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

UPLOAD = "admin:annotation_batch_upload"


def test_in_chromium_only_the_chosen_types_table_shows(page_for, admin):
    page = page_for(admin)
    page.goto(reverse(UPLOAD))
    visible = page.locator("section[data-hit-type]:visible")
    assert visible.count() == 1
    assert visible.get_attribute("data-hit-type") == page.locator("#id_hit_type").input_value()
    page.select_option("#id_hit_type", "rubric_score")
    assert [visible.nth(i).get_attribute("data-hit-type") for i in range(visible.count())] == \
        ["rubric_score"]
    assert page.locator("#columns-rubric_score code", has_text="score5").is_visible()
    with page.expect_download() as download:
        page.locator("#columns-rubric_score a", has_text="rubric_score-sample.jsonl").click()
    assert download.value.suggested_filename == "rubric_score-sample.jsonl"
