"""The vote planner on a study's real rows: ``vote_plan``, ``plan_votes``, ``/s/<slug>/plan/``
and the batch a plan becomes. The numbers themselves are checked in test_planner.py; here,
that the study's votes, judge and free slots reach the core, and that writes are all or none."""
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.models import Batch
from judging.models import Comparison
from judging.planner import PlanError
from judging.services.comparisons import SamplingError
from judging.services.vote_plans import vote_plan, vote_plan_batch_create
from studies.models import StudyMembership
from tests.judging.plan_builders import STRENGTH, voted_study
from tests.studies import builders as sb

pytestmark = pytest.mark.django_db


def test_the_plan_reads_the_studys_votes_and_the_judge_shrinks_it():
    study = voted_study()
    sb.study("elsewhere")  # another study's rows never enter
    result = vote_plan(study, "ci:200", judge="gpt-judge", votes_per_comparison=3,
                       reward=Decimal("0.10"))
    assert result.human_comparisons == 24
    assert sorted(result.world.models) == sorted(STRENGTH)
    assert result.world.rho > 0.5
    human, judged = result.plans.human_only, result.plans.with_judge
    assert human.reachable and judged.reachable
    assert 0 < judged.comparisons < human.comparisons
    assert result.human_cost.total == Decimal("0.10") * 3 * human.comparisons


def test_fee_rate_of_the_study_prices_the_plan():
    study = voted_study()
    study.fee_rate = Decimal("0.25")
    study.save()
    result = vote_plan(study, "ci:200", votes_per_comparison=3, reward=Decimal("0.20"))
    assert result.human_cost.total == Decimal("0.25") * 3 * result.plans.human_only.comparisons


@pytest.mark.parametrize("target, judge, message", [
    ("ci:zero", None, "unknown target"), ("separate:alpha,omega", None, "unknown model"),
    ("ci:100", "no-such-judge", "no automatic judge"), ("ci:100", "human", "no automatic judge")])
def test_bad_input_is_refused(target, judge, message):
    study = voted_study()
    with pytest.raises(PlanError, match=message):
        vote_plan(study, target, judge=judge)


def test_a_plan_becomes_a_draft_batch_of_the_planned_comparisons():
    study = voted_study()
    before = Comparison.objects.count()
    result, batches = vote_plan_batch_create(study, "ci:200", title="Round 2",
                                             votes_per_comparison=3, reward=Decimal("0.10"))
    made = Comparison.objects.filter(sampling="active")
    assert Comparison.objects.count() - before == result.plans.human_only.comparisons
    assert made.count() == result.plans.human_only.comparisons
    assert set(made.values_list("instance__study", flat=True)) == {study.pk}
    planned = {(result.world.models[i], result.world.models[j]): n
               for (i, j), n in result.plans.human_only.pairs.items()}
    for (x, y), n in planned.items():
        assert made.filter(response_a__model__name__in=[x, y],
                           response_b__model__name__in=[x, y]).count() == n
    [batch] = batches
    assert batch.study == study and batch.status == Batch.Status.DRAFT
    assert batch.tasks.count() == made.count() and batch.assignments_per_task == 3
    assert batch.budget == result.human_cost.total


def test_a_target_out_of_reach_writes_nothing():
    study = voted_study(instances=25)  # one free instance: one comparison per pair at most
    with pytest.raises(SamplingError, match="out of reach"):
        vote_plan_batch_create(study, "ci:20", title="never")
    assert not Comparison.objects.filter(sampling="active").exists()
    assert not Batch.objects.exists()


def test_plan_votes_prints_both_plans_and_creates_the_batch():
    study = voted_study()
    out = StringIO()
    call_command("plan_votes", "--study", study.slug, "--target", "ci:200", "--judge",
                 "gpt-judge", "--votes", "3", "--reward", "0.10", stdout=out)
    text = out.getvalue()
    assert "human only:" in text and "with gpt-judge (rho" in text
    assert not Batch.objects.exists()
    call_command("plan_votes", "--study", study.slug, "--target", "ci:200", "--judge",
                 "gpt-judge", "--create-batch", "R2", stdout=out)
    assert Batch.objects.get().title == "R2"
    with pytest.raises(CommandError, match="unknown target"):
        call_command("plan_votes", "--study", study.slug, "--target", "best:3")


def test_the_plan_page_shows_the_plan_and_the_owner_turns_it_into_a_batch(client,
                                                                          django_user_model):
    study = voted_study()
    owner = django_user_model.objects.create_user("olga", password="pw")
    StudyMembership.objects.create(study=study, user=owner, role="owner")
    client.force_login(owner)
    url = reverse("studies:plan", args=[study.slug])
    page = client.get(url, {"target": "ci:200", "judge": "gpt-judge", "votes": "3"})
    assert page.status_code == 200
    body = page.content.decode()
    assert 'id="plan-human"' in body and 'id="plan-judge"' in body
    judged = page.context["result"].plans.with_judge.comparisons
    bad = client.get(url, {"target": "ci:<b>x</b>"})
    assert 'id="plan-error"' in bad.content.decode() and "<b>x</b>" not in bad.content.decode()
    done = client.post(reverse("studies:plan_batch", args=[study.slug]),
                       {"target": "ci:200", "judge": "gpt-judge", "votes": "3"})
    assert done.status_code == 302
    assert Batch.objects.get(study=study).tasks.count() == judged
