"""A study's analyst day in real Chromium: the study home → the vote plan (with and without
the judge) → the plan turned into a draft batch → the board with the judge-powered estimates."""
import pytest
from django.urls import reverse

from annotation.models import Batch
from tests.judging.plan_builders import voted_study

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_plan_becomes_a_batch_and_the_board_shows_the_judge_powered_estimates(page_for,
                                                                                 admin):
    study = voted_study("walk")
    page = page_for(admin)
    page.goto(reverse("studies:home", args=[study.slug]))
    page.click("#plan-link")
    page.fill("input[name=target]", "ci:200")
    page.select_option("#plan-form select[name=judge]", "gpt-judge")
    page.fill("input[name=votes]", "3")
    page.click("#plan-form button")
    human = int(page.text_content("#plan-human td:nth-child(2)"))
    judged = int(page.text_content("#plan-judge td:nth-child(2)"))
    assert 0 < judged < human
    page.click("#plan-create button")
    assert "created with" in page.text_content(".flash-success")
    batch = Batch.objects.get(study=study)
    assert batch.status == Batch.Status.DRAFT and batch.tasks.count() == judged

    page.goto(reverse("studies:board", args=[study.slug]))
    page.select_option("#ppi-form select[name=ppi]", "gpt-judge")
    page.click("#ppi-form button")
    assert page.locator("#ppi-ratings tbody tr").count() == 4
    assert "human votes on" in page.text_content("#ppi-provenance")
