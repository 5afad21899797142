"""A study's budget caps what its batches and judge runs commit, fees included: opening a batch
or starting a run past it is refused with the figures, writing nothing; two concurrent
openings cannot both pass (PostgreSQL, threads); the figures show on the study's home and
beside the batch's estimate."""
import threading
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.db import connections
from django.urls import reverse

from annotation.engine.services.batches import batch_set_status
from annotation.engine.study_budget import study_money
from annotation.models import Batch
from judging.judges.models import Judge, JudgeRun
from judging.judges.services import judge_estimate, judge_run_start
from studies.models import StudyMembership
from tests.factories import make_batch
from tests.studies import builders

pytestmark = pytest.mark.django_db


def _study(budget, fee_rate="0.20"):
    study = builders.study("funded")
    study.budget, study.fee_rate = Decimal(budget), Decimal(fee_rate)
    study.save()
    return study


def _draft(study, tasks=2, answers=5, reward="1.00"):
    """A local draft: tasks × answers × reward, plus the study's fee rate on each reward."""
    return make_batch(tasks, n=answers, reward=Decimal(reward), activate=False, study=study)


def test_opening_within_the_budget_passes_and_counts_with_fees():
    study = _study("30")
    batch_set_status(_draft(study), Batch.Status.ACTIVE)
    money = study_money(study)
    assert money.spent == Decimal("12.00")  # 10 × $1.00 + 20 % fees
    assert money.remaining == Decimal("18.00")


def test_the_study_spend_is_read_in_the_same_queries_for_one_batch_or_many(
        django_assert_max_num_queries):
    """Every activation adds up the whole study: its batches' costs are grouped queries, not
    a handful per batch."""
    study = _study("1000")
    batch_set_status(_draft(study), Batch.Status.ACTIVE)
    with django_assert_max_num_queries(12) as one:
        assert study_money(study).spent == Decimal("12.00")
    for _ in range(4):
        batch_set_status(_draft(study), Batch.Status.ACTIVE)
    with django_assert_max_num_queries(len(one.captured_queries)):
        assert study_money(study).spent == Decimal("60.00")


def test_opening_past_the_budget_is_refused_with_the_figures_and_writes_nothing():
    study = _study("20")
    batch_set_status(_draft(study), Batch.Status.ACTIVE)
    second = _draft(study)
    with pytest.raises(ValidationError, match=r"needs \$12\.00 .* has \$8\.00 left of its "
                                              r"\$20\.00 budget \(\$12\.00 spent") as refused:
        batch_set_status(second, Batch.Status.ACTIVE)
    assert refused.value.code == "over_budget"
    second.refresh_from_db()
    assert second.status == Batch.Status.DRAFT
    assert study_money(study).spent == Decimal("12.00")


def test_another_studys_spend_and_a_study_without_budget_are_not_limited():
    study = _study("13")
    unlimited = builders.study("open")
    batch_set_status(_draft(unlimited, reward="5.00"), Batch.Status.ACTIVE)
    batch_set_status(_draft(study), Batch.Status.ACTIVE)
    assert study_money(unlimited).remaining is None


def test_the_console_refuses_and_shows_the_studys_figures(admin_client):
    study = _study("15")
    batch_set_status(_draft(study), Batch.Status.ACTIVE)
    draft = _draft(study, tasks=1)  # 5 × $1.00 + 20 %: $6.00 of the $3.00 left
    page = admin_client.get(reverse("study_console:batch", args=[study.slug, draft.uuid])).content.decode()
    assert 'id="study-spent">$12.00' in page and 'id="study-remaining">$3.00' in page
    assert 'id="study-needed">$6.00' in page
    response = admin_client.post(reverse("study_console:status", args=[study.slug, draft.uuid]),
                                 {"status": "active"}, follow=True)
    assert "needs $6.00 (fees included) and the study “Funded” has $3.00 left" in \
        response.content.decode()
    draft.refresh_from_db()
    assert draft.status == Batch.Status.DRAFT
    Batch.objects.filter(pk=draft.pk).update(provider="mturk")  # MTurk's fee: 20 % too
    launch = admin_client.get(reverse("study_console:launch", args=[study.slug, draft.uuid])).content.decode()
    assert 'id="study-remaining">$3.00' in launch and 'id="study-needed">$6.00' in launch


def test_the_study_home_shows_budget_spent_and_remaining(client, django_user_model):
    study = _study("40")
    batch_set_status(_draft(study), Batch.Status.ACTIVE)
    analyst = django_user_model.objects.create_user("ana", password="pw")
    StudyMembership.objects.create(user=analyst, study=study, role="analyst")
    client.force_login(analyst)
    html = client.get(f"/s/{study.slug}/").content.decode()
    assert "Budget <strong>$40.00</strong>" in html
    assert 'id="study-spent">$12.00' in html and 'id="study-remaining">$28.00' in html


@pytest.fixture
def priced_run():
    """A study with two comparisons and a judge whose run over them costs something."""
    study = _study("1000")
    ms = builders.models(study, "a", "b")
    items = [c.uuid for c in builders.voted(study, [(ms["a"], ms["b"], "")] * 2)]
    judge = Judge.objects.create(name="pricey", kind="pairwise", base_url="http://127.0.0.1:9/v1",
                                 model_name="stand-in", price_in_per_1k=Decimal("10"),
                                 price_out_per_1k=Decimal("10"))
    cost = judge_estimate(judge=judge, item_uuids=items, study=study).cost
    assert cost > 0
    return study, judge, items, cost


def test_a_judge_run_past_what_is_left_is_refused_and_writes_nothing(priced_run):
    study, judge, items, cost = priced_run
    study.budget = cost - Decimal("0.01")
    study.save()
    with pytest.raises(ValidationError, match=r"Refused starting a run of pricey: it needs "
                                              rf"\${cost:.2f}") as refused:
        judge_run_start(judge=judge, item_uuids=items, dispatch=False, study=study)
    assert refused.value.code == "over_budget"
    assert not JudgeRun.objects.exists()


def test_judge_runs_and_batches_share_the_budget(priced_run):
    study, judge, items, cost = priced_run
    study.budget = cost + Decimal("12.00")
    study.save()
    judge_run_start(judge=judge, item_uuids=items, dispatch=False, study=study)
    assert study_money(study).spent == cost  # an open run commits its estimate
    batch_set_status(_draft(study), Batch.Status.ACTIVE)  # exactly the $12.00 left
    with pytest.raises(ValidationError, match=r"has \$0\.00 left"):
        judge_run_start(judge=judge, item_uuids=items[:1], dispatch=False, study=study)
    assert JudgeRun.objects.count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_concurrent_openings_cannot_both_pass_the_cap():
    study = _study("20")
    drafts = [_draft(study), _draft(study)]  # $12.00 each: only one fits
    barrier, outcomes = threading.Barrier(2), []

    def open_(batch):
        try:
            barrier.wait()
            batch_set_status(Batch.objects.get(pk=batch.pk), Batch.Status.ACTIVE)
            outcomes.append("opened")
        except ValidationError as exc:
            outcomes.append(exc.code)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=open_, args=(b,)) for b in drafts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["opened", "over_budget"]
    assert Batch.objects.filter(study=study, status=Batch.Status.ACTIVE).count() == 1
    assert study_money(study).spent == Decimal("12.00")


def test_the_admins_activation_page_warns_and_its_post_refuses(admin_client_):
    study = _study("15")
    batch_set_status(_draft(study), Batch.Status.ACTIVE)
    draft = _draft(study, tasks=1)
    url = reverse("admin:annotation_batch_changelist")
    page = admin_client_.post(url, {"action": "activate", "_selected_action": [draft.pk],
                                    "index": 0})
    row = page.context["rows"][0]
    assert (row["study_needed"], row["study_money"].remaining, row["over_study_budget"]) == \
        (Decimal("6.00"), Decimal("3.00"), True)
    assert "Funded: $6.00 / $3.00" in page.content.decode()
    done = admin_client_.post(url, {"action": "activate", "_selected_action": [draft.pk],
                                    "post": "yes"}, follow=True)
    assert "has $3.00 left of its $15.00 budget" in done.content.decode()
    draft.refresh_from_db()
    assert draft.status == Batch.Status.DRAFT
