"""Lanes work units in batches: a batch claim never hands a unit to two lanes, the run's
counters add up under concurrent lanes, an item's judgments are written once whether its
orderings finish in one batch or in two, and a cached re-run sends nothing and writes the
same judgments again (no duplicates)."""
import re
import threading
from collections import Counter

import pytest
from django.db import connection
from django.db.models import Sum

from annotation.models import Image, InstanceImage
from judging.judges.models import JudgeCall, JudgeRun, JudgeUnit
from judging.judges.services import (
    _claim_units,
    judge_run_begin,
    judge_run_execute,
    judge_run_resume,
    judge_run_start,
)
from judging.models import Judgment
from tests.judging.judges.conftest import (
    VERDICT,
    make_comparisons,
    make_judge,
)
from tests.support.fake_openai import Reply, prompt_text

pytestmark = pytest.mark.django_db


def _shown_second_first(body) -> bool:
    """The BA ordering: model m2's answer is shown before m1's."""
    text = prompt_text(body)
    return text.index("m2 answer") < text.index("m1 answer")


def _verdicts(judge):
    return sorted(Judgment.objects.filter(annotator=judge.ident).values_list(
        "comparison_id", "choice", "template_version", "prompt_hash"))


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_batch_claims_never_hand_one_unit_to_two_lanes(server):
    comparisons = make_comparisons(40)
    run = judge_run_start(judge=make_judge(server, concurrency=8),
                          item_uuids=[c.uuid for c in comparisons], dispatch=False)
    assert judge_run_begin(run)
    claimed, start = [], threading.Barrier(8)

    def lane(most):
        try:
            start.wait()
            while units := _claim_units(run, 8, most=most):
                claimed.extend(u.pk for u in units)
        finally:
            connection.close()

    threads = [threading.Thread(target=lane, args=(most,)) for most in (1, 3, 16, 200) * 2]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(claimed) == len(set(claimed)) == 80
    assert set(claimed) == set(run.units.values_list("pk", flat=True))
    assert not run.units.exclude(status=JudgeUnit.Status.RUNNING).exists()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_counters_add_up_under_concurrent_lanes_in_two_processes(server):
    comparisons = make_comparisons(30)
    # both orderings of three items fail for good ("m1 answer 1" must not match "… 12")
    broken = re.compile("|".join(rf"{re.escape(c.response_a.text)}\b" for c in comparisons[:3]))

    def responder(body):
        if broken.search(prompt_text(body)):
            return Reply.error(400)
        return Reply.ok(VERDICT)

    server.latency_s = 0.02
    server.responder = responder
    judge = make_judge(server, concurrency=8, max_retries=0)
    run = judge_run_start(judge=judge, item_uuids=[c.uuid for c in comparisons], dispatch=False)
    run = judge_run_execute(run, processes=2)
    assert (run.status, run.units_done, run.units_failed) == ("done", 54, 6)
    assert Counter(run.units.values_list("status", flat=True)) == {"done": 54, "failed": 6}
    calls = JudgeCall.objects.filter(run=run, status=JudgeCall.Status.DONE).aggregate(
        cost=Sum("cost"), tin=Sum("prompt_tokens"), tout=Sum("completion_tokens"))
    assert run.calls_made == 54 == server.call_count - 6 and run.calls_failed == 6
    assert (run.cost, run.tokens_in, run.tokens_out) == (calls["cost"], calls["tin"],
                                                         calls["tout"])
    assert run.reserved == 0 and run.calls_cached == 0
    # 27 items with both orderings done: one judgment each, written once
    assert Judgment.objects.filter(annotator=judge.ident).count() == 27


def test_both_orderings_in_one_batch_write_the_items_judgments_once(server):
    comparisons = make_comparisons(3)
    server.responder = lambda body: VERDICT
    judge = make_judge(server, concurrency=1)
    run = judge_run_execute(judge_run_start(judge=judge, item_uuids=[c.uuid for c in comparisons],
                                            dispatch=False))
    assert (run.status, run.units_done) == ("done", 6)
    stored = list(Judgment.objects.filter(annotator=judge.ident).values_list(
        "comparison_id", flat=True))
    assert sorted(stored) == sorted(c.pk for c in comparisons)  # one per item, none twice
    # Verdict A in the AB ordering and A (i.e. response B) in the BA ordering: a tie
    assert set(Judgment.objects.filter(annotator=judge.ident).values_list(
        "choice", flat=True)) == {"tie"}


def test_orderings_finished_in_different_batches_write_the_judgments_once(server):
    """BA fails first; the resumed run finishes it in a later batch, which alone writes."""
    comparisons = make_comparisons(2)
    server.responder = lambda body: Reply.error(400) if _shown_second_first(body) else VERDICT
    judge = make_judge(server, concurrency=1, max_retries=0)
    uuids = [c.uuid for c in comparisons]
    run = judge_run_execute(judge_run_start(judge=judge, item_uuids=uuids, dispatch=False))
    assert (run.units_done, run.units_failed) == (2, 2)
    assert not Judgment.objects.filter(annotator=judge.ident).exists()  # half an item: none
    server.responder = lambda body: VERDICT
    run = judge_run_execute(judge_run_resume(run, dispatch=False))
    assert (run.status, run.units_done, run.units_failed) == ("done", 4, 0)
    assert sorted(Judgment.objects.filter(annotator=judge.ident).values_list(
        "comparison_id", flat=True)) == sorted(c.pk for c in comparisons)


@pytest.mark.django_db(transaction=True)
def test_cached_rerun_sends_nothing_and_writes_the_same_judgments(server):
    comparisons = make_comparisons(12)
    server.responder = lambda body: VERDICT if len(prompt_text(body)) % 2 else (
        "Overall, Response B is better.")
    judge = make_judge(server, concurrency=4)
    uuids = [c.uuid for c in comparisons]
    first = judge_run_execute(judge_run_start(judge=judge, item_uuids=uuids, dispatch=False))
    sent, verdicts = server.call_count, _verdicts(judge)
    assert (first.status, first.calls_made, sent, len(verdicts)) == ("done", 24, 24, 12)
    second = judge_run_start(judge=judge, item_uuids=uuids, dispatch=False)
    assert (second.estimated_cost, second.units_total) == (0, 24)
    second = judge_run_execute(second)
    assert server.call_count == sent  # nothing sent
    assert (second.status, second.units_done, second.calls_made, second.calls_cached,
            second.cost) == ("done", 24, 0, 24, 0)
    assert _verdicts(judge) == verdicts  # the same verdicts, replaced: none doubled
    assert second.units.filter(status=JudgeUnit.Status.DONE).count() == 24
    assert JudgeRun.objects.get(pk=first.pk).units_done == 24


def test_a_cached_batch_gives_back_the_units_that_need_calls(server, monkeypatch):
    """Cached units first, new ones after: the lane takes a large batch once a batch sent
    nothing, gives the rest back at the first request, and every unit is judged once."""
    from judging.judges import services

    batches, finish = [], services._finish_batch

    def spy(run, items, done, failed, reopen, caller):
        batches.append((len(done), len(reopen)))
        return finish(run, items, done, failed, reopen, caller)

    monkeypatch.setattr(services, "_finish_batch", spy)
    comparisons = make_comparisons(30)
    server.responder = lambda body: VERDICT
    judge = make_judge(server, concurrency=1)
    old, new = [c.uuid for c in comparisons[:20]], [c.uuid for c in comparisons[20:]]
    judge_run_execute(judge_run_start(judge=judge, item_uuids=old, dispatch=False))
    assert server.call_count == 40
    batches.clear()
    run = judge_run_execute(judge_run_start(judge=judge, item_uuids=old + new, dispatch=False))
    # BATCH_UNITS cached units; then a large batch: the other cached ones and one paid, the
    # other 19 given back
    b = services.BATCH_UNITS
    assert batches[:2] == [(b, 0), (40 - b + 1, 19)] and sum(d for d, _ in batches) == 60
    assert (run.status, run.units_done, run.calls_cached, run.calls_made) == ("done", 60, 40, 20)
    assert server.call_count == 60 and len(set(r.headers["idempotency-key"]
                                                for r in server.requests)) == 60
    stored = list(Judgment.objects.filter(annotator=judge.ident).values_list(
        "comparison_id", flat=True))
    assert sorted(stored) == sorted(c.pk for c in comparisons)


def test_a_cancel_stops_the_calls_of_a_claimed_batch(server, monkeypatch):
    """The lane has claimed all twelve units in one batch; a cancel after the second unit
    stops the calls of the ten others, which go back to pending."""
    from judging.judges import services

    comparisons = make_comparisons(6)
    server.responder = lambda body: VERDICT
    run = judge_run_start(judge=make_judge(server, concurrency=1),
                          item_uuids=[c.uuid for c in comparisons], dispatch=False)
    judged, run_unit = [], services.run_unit

    def cancel_after_two(judge, item, ordering, caller):
        if len(judged) == 2:
            services.judge_run_cancel(run)
        judged.append(ordering)
        return run_unit(judge, item, ordering, caller)

    monkeypatch.setattr(services, "run_unit", cancel_after_two)
    run = judge_run_execute(run)
    assert (run.status, run.units_done, server.call_count) == ("cancelled", 2, 2)
    assert Counter(run.units.values_list("status", flat=True)) == {"done": 2, "pending": 10}
    # The call stopped by the cancel holds no lease: on PostgreSQL its INSERT found the run
    # stopped and wrote nothing; elsewhere it was inserted, then handed back as pending.
    calls = Counter(JudgeCall.objects.filter(run=run).values_list("status", flat=True))
    assert calls == ({"done": 2} if connection.vendor == "postgresql"
                     else {"done": 2, "pending": 1})


@pytest.mark.postgres
def test_a_calls_insert_checks_the_run_is_running(server):
    """PostgreSQL: one statement inserts the claimed call only while its run is running and
    tells the three outcomes apart: inserted (True), key taken (False), run stopped (None,
    nothing written)."""
    from django.utils import timezone

    from judging.judges.calls import _insert_claimed

    run = judge_run_start(judge=make_judge(server), item_uuids=[make_comparisons(1)[0].uuid],
                          dispatch=False)
    judge_run_begin(run)

    def call(key):
        return JudgeCall(idempotency_key=key, run=run, judge=run.judge, template_name="t",
                         template_version="1", prompt_hash="h", created_at=timezone.now(),
                         status=JudgeCall.Status.IN_FLIGHT, attempts=1)

    first = call("k1")
    assert _insert_claimed(first, while_running=True) is True
    assert JudgeCall.objects.get(pk=first.pk).status == JudgeCall.Status.IN_FLIGHT
    assert _insert_claimed(call("k1"), while_running=True) is False  # the key is taken
    JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.CANCELLED)
    assert _insert_claimed(call("k2"), while_running=True) is None
    assert _insert_claimed(call("k1"), while_running=True) is False  # taken, run stopped
    assert list(JudgeCall.objects.values_list("idempotency_key", flat=True)) == ["k1"]


def test_loaded_items_build_their_prompts_without_queries(server, django_assert_num_queries):
    """A batch's items come with their images as a plain list, in position order: building
    each prompt's image context and image URLs reads nothing more."""
    from judging.judges.plans import image_context, image_urls, load_items

    comparisons = make_comparisons(3)
    second = Image.objects.create(source_url="https://example.org/second.png")
    InstanceImage.objects.create(instance=comparisons[0].instance, image=second, position=1,
                                 caption="A blue circle.")
    judge = make_judge(server)
    judge.send_images = True
    items = load_items(judge, [c.uuid for c in comparisons])
    with django_assert_num_queries(0):
        contexts = [image_context(items[str(c.uuid)].instance) for c in comparisons]
        urls = [image_urls(items[str(c.uuid)].instance) for c in comparisons]
    assert contexts[0] == "Image 1: A red square on white.\nImage 2: A blue circle."
    assert contexts[1] == "A red square on white." and len(urls[0]) == 2
    assert urls[0][1] == "https://example.org/second.png"
    fresh = type(comparisons[0].instance).objects.get(pk=comparisons[0].instance.pk)
    assert image_context(fresh) == contexts[0]  # not loaded by load_items: read then


# Planner settings that push the claim's locking subquery onto the inner side of a nested loop
# with no Materialize node between: the plan PostgreSQL chose in full `make test` runs, once the
# unit table's statistics called it tiny (there the claim took all 60 pending units at once).
_PLANS = {
    "default": (),
    "nested loop": ("enable_hashjoin", "enable_mergejoin"),
    "nested loop, no hash aggregate": ("enable_hashagg", "enable_hashjoin", "enable_mergejoin",
                                       "enable_sort"),
    "nested loop re-running the subquery": ("enable_hashagg", "enable_hashjoin",
                                            "enable_mergejoin", "enable_sort",
                                            "enable_material"),
}


@pytest.mark.postgres
@pytest.mark.parametrize("plan", list(_PLANS))
def test_a_claim_takes_at_most_k_units_whatever_the_plan(server, plan):
    """One claim takes ``min(most, pending // lanes)`` units in pk order, however the
    planner joins the claim's locking SELECT to the UPDATE."""
    comparisons = make_comparisons(30)
    run = judge_run_start(judge=make_judge(server), item_uuids=[c.uuid for c in comparisons],
                          dispatch=False)
    assert judge_run_begin(run)
    with connection.cursor() as cursor:
        for setting in _PLANS[plan]:
            cursor.execute(f"SET LOCAL {setting} = off")  # until the test's transaction ends
    first = _claim_units(run, 1, most=32)
    second = _claim_units(run, 4, most=32)  # 28 pending over 4 lanes: 7
    pending = list(run.units.filter(status=JudgeUnit.Status.PENDING).order_by("pk")
                   .values_list("pk", flat=True))
    assert (len(first), len(second), len(pending)) == (32, 7, 21)
    every = list(run.units.order_by("pk").values_list("pk", flat=True))
    assert [u.pk for u in first + second] == every[:39]
