"""A rejection means something everywhere (issue #27, item 1): rejecting ben's two votes on the
batch review page changes, in that same request, the human leaderboard, the report's
majorities, the dashboard's done and spent, the tasks' open slots, the dataset export's marker
and ben's "My work"; overriding the rejection puts everything back."""
import re
from decimal import Decimal

import pyarrow.parquet as pq
import pytest
from django.urls import reverse

from agreement.reports.params import ReportParams
from agreement.reports.verdicts import gather_pairwise_verdicts
from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.workers import worker_for_user
from annotation.models import Assignment, Task
from judging.dataset.export import dataset_export
from judging.models import Comparison, Judgment
from judging.services.comparisons import comparison_batch_create
from tests.factories import make_workers
from tests.judging import builders
from tests.support.homes import submit

pytestmark = pytest.mark.django_db(transaction=True)  # the cache hears of it on commit

REASON = "Answered without looking <b>at</b> the images."


def _comparison(ms) -> Comparison:
    inst = builders.instance()
    return Comparison.objects.create(instance=inst, response_a=builders.respond(inst, ms["alpha"]),
                                     response_b=builders.respond(inst, ms["beta"]))


@pytest.fixture
def study(alice, bob):
    """Two comparisons of alpha (side A) against beta (side B), three votes each: amy prefers
    alpha, ben and cy beta, so beta wins both items 2/3 while ben's votes count."""
    from annotation.engine.services.batches import batch_set_status
    from annotation.models import Batch

    ms = builders.models("alpha", "beta")
    comparisons = [_comparison(ms), _comparison(ms)]
    batch = comparison_batch_create(comparisons=comparisons, title="Rejections",
                                    judgments_per_comparison=3, reward=Decimal("0.10"))
    batch_set_status(batch, Batch.Status.ACTIVE)
    amy, ben = worker_for_user(alice), worker_for_user(bob)
    cy, = make_workers(1)
    for worker, choice in ((amy, "A"), (ben, "B"), (cy, "B")):
        for _ in comparisons:
            submit(batch, worker, {"choice": choice})
    return batch, ben, comparisons


def _board(client) -> dict[str, int]:
    data = client.get(reverse("judging:leaderboard_download", args=["json"])).json()
    return {row["model"]: row["matches"] for row in data["rows"]}


def _api_levels(client) -> list[str]:
    return sorted(c["level"] for c in client.get("/api/eval/majorities/").json()["comparisons"])


def _report_majority(comparisons) -> list:
    verdicts = gather_pairwise_verdicts(ReportParams(metrics=[]), {})
    return [verdicts.majority.get((c.pk, "")) for c in comparisons]


def _dashboard(client, batch) -> tuple[str, str]:
    html = client.get(reverse("homes:dashboard")).content.decode()
    row = html[html.index(batch.title):]
    done = re.search(r'class="num done">(\d+)<', row).group(1)
    spent = re.search(r'class="spent">\$([\d.]+)<', row).group(1)
    return done, spent


def _open_slots(batch) -> list[int]:
    return [t.max_assignments - t.slots_taken for t in Task.objects.filter(batch=batch)]


def _exported(tmp_path) -> tuple[int, int]:
    """(judgments exported, of which marked rejected)."""
    dataset_export(tmp_path)
    table = pq.read_table(tmp_path / "judgments.parquet").to_pylist()
    return len(table), sum(bool(row.get("rejected")) for row in table)


def test_rejecting_and_reinstating_votes_moves_every_count(study, admin_client_, analyst_client,
                                                          bob_client, tmp_path):
    batch, ben, comparisons = study
    review = reverse("admin:annotation_marketplacebatch_review", args=[batch.pk])
    bens = [str(a.uuid) for a in Assignment.objects.filter(worker=ben)]

    def state():
        return {"board": _board(analyst_client), "api": _api_levels(analyst_client),
                "report": _report_majority(comparisons),
                "dashboard": _dashboard(admin_client_, batch), "slots": _open_slots(batch),
                "export": _exported(tmp_path)}

    before = state()  # also fills the leaderboard cache the rejection must invalidate
    assert before == {"board": {"alpha": 6, "beta": 6}, "api": ["2/3", "2/3"],
                      "report": ["B", "B"], "dashboard": ("6", "0.60"), "slots": [0, 0],
                      "export": (6, 0)}

    admin_client_.post(review, {"decision": "reject", "reason": REASON, "assignment": bens})
    assert state() == {"board": {"alpha": 4, "beta": 4}, "api": ["1/2", "1/2"],
                       "report": [None, None], "dashboard": ("4", "0.40"), "slots": [1, 1],
                       "export": (6, 2)}
    assert Judgment.objects.filter(worker=ben).count() == 0  # no reader counts them
    assert Judgment.with_rejected.filter(worker=ben, rejected=True).count() == 2  # kept
    my_work = bob_client.get(reverse("annotation:my_work")).content.decode()
    assert my_work.count("Reason: Answered without looking &lt;b&gt;at&lt;/b&gt; the images.") == 2
    # The slots are open to other workers, never to ben again.
    assert task_claim_next(batch=batch, worker=ben) is None

    admin_client_.post(review + "?status=rejected", {"decision": "override", "assignment": bens})
    assert state() == before
    assert "Reason:" not in bob_client.get(reverse("annotation:my_work")).content.decode()


def test_a_freed_slot_goes_to_another_worker_and_a_late_override_adds_a_vote(study,
                                                                               admin_client_):
    batch, ben, comparisons = study
    review = reverse("admin:annotation_marketplacebatch_review", args=[batch.pk])
    bens = [str(a.uuid) for a in Assignment.objects.filter(worker=ben)]
    admin_client_.post(review, {"decision": "reject", "reason": REASON, "assignment": bens})
    dan, = make_workers(1)
    for _ in comparisons:
        submit(batch, dan, {"choice": "A"})
    assert _open_slots(batch) == [0, 0]  # N reached again, by accepted work
    assert _report_majority(comparisons) == ["A", "A"]  # amy and dan against cy

    admin_client_.post(review + "?status=rejected", {"decision": "override", "assignment": bens})
    # The tasks were full: ben's work is paid and its votes count (4 per item), but it holds
    # no slot, so done stays at N per task and the slot invariant holds.
    assert _open_slots(batch) == [0, 0]
    assert list(Assignment.objects.filter(worker=ben).values_list("status", "counted")) == [
        ("approved", False), ("approved", False)]
    assert Judgment.objects.filter(source=Judgment.HUMAN).count() == 8
    assert _report_majority(comparisons) == [None, None]  # 2-2
    assert _dashboard(admin_client_, batch)[0] == "6"


def test_blocking_a_worker_can_reject_their_work_in_a_batch_in_one_step(study, admin_client_):
    batch, ben, comparisons = study
    page = reverse("admin:annotation_worker_overview", args=[ben.pk])
    assert f"{batch.title} (2 awaiting review)" in admin_client_.get(page).content.decode()
    refused = admin_client_.post(page, {"op": "block", "reject_batch": str(batch.uuid),
                                        "reason": "  "}, follow=True)
    assert any("needs a reason" in str(m) for m in refused.context["messages"])
    ben.refresh_from_db()
    assert not ben.blocked and Judgment.objects.filter(worker=ben).count() == 2  # nothing done

    admin_client_.post(page, {"op": "block", "reject_batch": str(batch.uuid), "reason": REASON})
    ben.refresh_from_db()
    assert ben.blocked and ben.blocked_reason == REASON
    assert set(Assignment.objects.filter(worker=ben).values_list("status", flat=True)) == {
        "rejected"}
    assert Judgment.objects.filter(worker=ben).count() == 0
    assert _report_majority(comparisons) == [None, None] and _open_slots(batch) == [1, 1]


def test_a_rejection_in_a_finished_local_batch_reopens_it_for_the_freed_slot(study,
                                                                               admin_client_):
    from annotation.engine.services.completion import batches_finish_completed
    from annotation.models import Batch

    batch, ben, comparisons = study
    assert batches_finish_completed() == 1
    review = reverse("admin:annotation_marketplacebatch_review", args=[batch.pk])
    bens = [str(a.uuid) for a in Assignment.objects.filter(worker=ben)]
    admin_client_.post(review, {"decision": "reject", "reason": REASON, "assignment": bens})
    batch.refresh_from_db()
    assert batch.status == Batch.Status.ACTIVE
    dan, = make_workers(1)
    for _ in comparisons:
        submit(batch, dan, {"choice": "A"})
    assert batches_finish_completed() == 1  # N reached again by accepted work


def test_a_rejection_shows_at_once_on_a_board_served_behind_while_votes_arrive(
        study, admin_client_, analyst_client, settings):
    """A board served a little behind while votes arrive (``judging.board_refresh``) never
    hides a decision: the rejection's request recomputes it, with the new vote too."""
    from judging import board_refresh
    from judging.services.judgments.record import judgment_record

    settings.LEADERBOARD_STALE_MIN_JUDGMENTS = 0  # every board may be served behind
    settings.LEADERBOARD_STALE_SHARE = 1
    batch, ben, comparisons = study
    url = reverse("judging:leaderboard_download", args=["json"])
    assert _board(analyst_client) == {"alpha": 6, "beta": 6}
    judgment_record(source=Judgment.HUMAN, annotator="imported", comparison=comparisons[0],
                    choice="A")
    behind = analyst_client.get(url)
    assert behind["X-Board-Judgments-Behind"] == "1"
    assert {r["model"]: r["matches"] for r in behind.json()["rows"]} == {"alpha": 6, "beta": 6}
    board_refresh.wait_for_refreshes(30)
    review = reverse("admin:annotation_marketplacebatch_review", args=[batch.pk])
    bens = [str(a.uuid) for a in Assignment.objects.filter(worker=ben)]
    admin_client_.post(review, {"decision": "reject", "reason": REASON, "assignment": bens})
    after = analyst_client.get(url)
    assert after["X-Board-Judgments-Behind"] == "0"
    assert {r["model"]: r["matches"] for r in after.json()["rows"]} == {"alpha": 5, "beta": 5}
