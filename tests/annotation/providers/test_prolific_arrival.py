"""``prolific_arrival_claim``: the Prolific arrival is one transaction (claim + session ids)."""
import threading

import pytest
from django.db import connection, connections
from django.test import Client
from django.urls import reverse

from annotation.engine.services.errors import AssignmentConflict
from annotation.models import Assignment, Task, Worker
from annotation.providers.prolific import arrival as arrivals
from tests.factories import make_batch, publish_on_prolific

pytestmark = pytest.mark.django_db(transaction=True)

DONE = "/ext/prolific/batch/x/done"


def arrive(batch, pid, session, study="study1"):
    return arrivals.prolific_arrival_claim(batch=batch, participant_id=pid, study_id=study,
                                           session_id=session, submit_to=DONE)


def slots_taken(batch) -> int:
    return sum(Task.objects.filter(batch=batch).values_list("slots_taken", flat=True))


def test_a_failure_after_the_claim_leaves_no_lease_and_writes_nothing(monkeypatch):
    batch = make_batch(2, n=1)
    publish_on_prolific(batch)

    def fail(*args, **kwargs):
        raise RuntimeError("database went away after the claim")

    monkeypatch.setattr(arrivals, "_session_attach", fail)
    with pytest.raises(RuntimeError):
        arrive(batch, "PID1", "SESS1")
    # Through the page as well: a 500, and still nothing written.
    url = reverse("annotation:prolific_batch", args=[batch.uuid])
    page = Client(raise_request_exception=False).get(
        url, {"PROLIFIC_PID": "PID2", "STUDY_ID": "study1", "SESSION_ID": "SESS2"})
    assert page.status_code == 500
    assert slots_taken(batch) == 0
    assert not Assignment.objects.exists()
    assert not Worker.objects.filter(provider="prolific").exists()

    monkeypatch.undo()  # the same arrival, once the follow-up works, gets the free slot
    assignment = arrive(batch, "PID1", "SESS1")
    stored = Assignment.objects.get()
    assert stored.pk == assignment.pk and stored.status == "leased"
    assert (stored.provider_assignment_id, stored.provider_hit_id, stored.provider_submit_to) \
        == ("SESS1", "study1", DONE)
    assert (assignment.provider_assignment_id, assignment.task_id) == ("SESS1", stored.task_id)
    assert slots_taken(batch) == 1
    assert arrive(batch, "PID1", "SESS1").pk == assignment.pk  # a reload: the same lease


def test_only_a_study_published_for_the_batch_is_accepted_and_a_refusal_writes_nothing():
    batch = make_batch(1, n=1)
    with pytest.raises(arrivals.StudyNotPublished):  # a local batch, never published
        arrive(batch, "PID1", "SESS1")
    publish_on_prolific(batch, "study1")
    with pytest.raises(arrivals.StudyNotPublished):
        arrive(batch, "PID1", "SESS1", study="another")
    assert not Worker.objects.filter(provider="prolific").exists()
    arrive(batch, "PID1", "SESS1")
    other = make_batch(1, n=1)
    publish_on_prolific(other, "study2")
    with pytest.raises(AssignmentConflict):  # someone else's session
        arrive(batch, "PID2", "SESS1")
    with pytest.raises(AssignmentConflict):  # the same session replayed on another batch
        arrive(other, "PID1", "SESS1", study="study2")
    assert Assignment.objects.count() == 1 and slots_taken(other) == 0


@pytest.mark.postgres
@pytest.mark.parametrize("same_participant", [True, False])
def test_concurrent_arrivals_with_one_session_lease_one_slot(same_participant):
    """A double-clicked link (same participant) gets one lease back everywhere; a forged copy
    of the session (other participants) is refused, and its claim rolls back with it."""
    if connection.vendor != "postgresql":
        pytest.skip("concurrency test needs PostgreSQL")
    batch = make_batch(8, n=8)
    publish_on_prolific(batch)
    results: list = []
    barrier = threading.Barrier(8)

    def go(i):
        try:
            barrier.wait()
            results.append(arrive(batch, "PID" if same_participant else f"PID{i}", "SESS"))
        except AssignmentConflict as exc:
            results.append(exc)
        except Exception as exc:  # surfaced below
            results.append(("error", exc))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=go, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not [r for r in results if isinstance(r, tuple)], results
    won = Assignment.objects.get()  # exactly one assignment, carrying the session
    assert won.provider_assignment_id == "SESS" and won.status == "leased"
    assert slots_taken(batch) == 1
    granted = [r for r in results if isinstance(r, Assignment)]
    assert {a.pk for a in granted} == {won.pk}
    assert len(granted) == (8 if same_participant else 1)
