"""Quality signals at submit: the page's telemetry (checked, stored, exported), the flags
(too fast, paste-heavy, near-duplicate) and the review page's flag filter with its
decide-every-matching-assignment choice."""
import csv
import io
import json
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.engine.hit_types import get_hit_type
from annotation.engine.services.batches import batch_create_from_rows, batch_set_status
from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.quality import telemetry_clean
from annotation.engine.services.submissions import assignment_submit
from annotation.engine.services.workers import worker_for_user
from annotation.models import Assignment, Batch
from tests.factories import make_batch, make_workers

pytestmark = pytest.mark.django_db

RESPONSE = "The clock shows ten past two."
FEEDBACK = "Reads both hands correctly and says the hour and the minutes clearly."
OTHER_FEEDBACK = "Misses the second hand entirely, and the answer is vague about morning."


def rubric_batch(n_tasks=1, per_task=3):
    rows = [dict(get_hit_type("rubric_score").example_rows[0], response_text=RESPONSE,
                 item_id=f"item-{i}") for i in range(n_tasks)]
    batch = batch_create_from_rows(hit_type="rubric_score", title="rubric", rows=rows,
                                   assignments_per_task=per_task, min_seconds=0)
    return batch_set_status(batch, Batch.Status.ACTIVE)


def submit(batch, worker, data, *, seconds=60.0, telemetry=None) -> Assignment:
    now = timezone.now()
    lease = task_claim_next(batch=batch, worker=worker, now=now)
    assignment_submit(assignment=lease, data=data, telemetry=telemetry,
                      now=now + timedelta(seconds=seconds))
    return Assignment.objects.get(pk=lease.pk)


def codes(assignment) -> list[str]:
    return [f["code"] for f in Assignment.objects.get(pk=assignment.pk).flags]


# --- telemetry ----------------------------------------------------------------------------------

def test_telemetry_keeps_known_whole_non_negative_bounded_values_only():
    good = {"active_ms": 41_250, "blurs": 2, "pastes": 1, "pasted_chars": 80, "keystrokes": 0}
    assert telemetry_clean(json.dumps(good)) == good
    assert telemetry_clean(good) == good
    assert telemetry_clean({"active_ms": 1000.0, "pastes": 1.5}) == {"active_ms": 1000}
    assert telemetry_clean({"pastes": -1, "blurs": True, "keystrokes": "9", "active_ms": None,
                            "pasted_chars": 10**12, "evil": 5}) == {}
    for raw in ("", "not json", "[1, 2]", "null", "\x00", json.dumps({"pastes": 1}) + " " * 3000,
                None, 7, ["pastes"]):
        assert telemetry_clean(raw) == {}


def test_the_page_posts_telemetry_that_is_stored_and_kept_out_of_the_answer(alice, alice_client):
    batch = rubric_batch()
    url = alice_client.get(reverse("annotation:batch_next", args=[batch.uuid]))["Location"]
    sent = {"active_ms": 52_000, "blurs": 1, "pastes": 1, "pasted_chars": 65, "keystrokes": 9}
    response = alice_client.post(url, {"score": "4", "feedback": FEEDBACK,
                                       "_telemetry": json.dumps(sent)})
    assert response.status_code in (200, 302)
    a = Assignment.objects.get(batch=batch)
    assert a.status == "submitted" and a.answer == {"score": 4, "feedback": FEEDBACK}
    assert a.telemetry == sent
    assert codes(a) == ["paste_heavy"]  # 65 of the 69 characters were pasted


@pytest.mark.parametrize("garbage", ["\x00{}", "{", "[]", '{"pastes": "lots"}',
                                     "x" * 50_000, '{"keystrokes": -5, "active_ms": 1e300}'])
def test_garbage_telemetry_is_ignored_never_refused(alice_client, garbage):
    batch = rubric_batch()
    url = alice_client.get(reverse("annotation:batch_next", args=[batch.uuid]))["Location"]
    response = alice_client.post(url, {"score": "3", "feedback": FEEDBACK, "_telemetry": garbage})
    assert response.status_code in (200, 302)
    a = Assignment.objects.get(batch=batch)
    assert a.status == "submitted" and a.telemetry == {} and a.flags == []


def test_an_api_submit_may_send_telemetry_which_only_the_admin_api_shows(alice, admin):
    batch = rubric_batch()
    worker_api, admin_api = APIClient(), APIClient()
    worker_api.force_authenticate(alice)
    admin_api.force_authenticate(admin)
    claimed = worker_api.post(f"/api/my/assignments/claim/{batch.uuid}/")
    assert claimed.status_code == 201, claimed.content
    body = {"answer": {"score": 5, "feedback": FEEDBACK},
            "telemetry": {"keystrokes": 70, "pastes": 0, "bogus": "x"}}
    done = worker_api.post(f"/api/my/assignments/{claimed.data['uuid']}/submit/", body,
                           format="json")
    assert done.status_code == 201, done.content
    assert "telemetry" not in done.data and "flags" not in done.data  # not the worker's
    assert Assignment.objects.get(batch=batch).telemetry == {"keystrokes": 70, "pastes": 0}
    listed = admin_api.get("/api/assignments/").data["results"]
    assert [(r["telemetry"], r["flags"]) for r in listed] == [
        ({"keystrokes": 70, "pastes": 0}, [])]


# --- flags ------------------------------------------------------------------------------------

def test_too_fast_against_the_batch_median_once_enough_answers_count(settings):
    settings.FLAG_MIN_SAMPLES, settings.FLAG_FAST_SHARE = 3, 0.3
    batch = make_batch(1, n=8)
    workers = make_workers(8)
    first = submit(batch, workers[0], {"choice": "A"}, seconds=2)  # before any median
    assert codes(first) == []
    for w in workers[1:3]:
        submit(batch, w, {"choice": "A"}, seconds=60)
    third_slow = submit(batch, workers[3], {"choice": "A"}, seconds=60)
    # Median known from here (3 answers before it): the first answer is checked again.
    assert codes(third_slow) == [] and codes(first) == ["too_fast"]
    fast = submit(batch, workers[4], {"choice": "B"}, seconds=10)
    ok = submit(batch, workers[5], {"choice": "B"}, seconds=25)
    assert codes(fast) == ["too_fast"] and codes(ok) == []
    assert "10.0 s against the batch's median of 60.0 s" in fast.flags[0]["detail"]


def test_paste_heavy_only_for_free_text_and_only_when_most_was_pasted():
    batch = rubric_batch(per_task=3)
    alice, bob, carol = make_workers(3)
    heavy = submit(batch, alice, {"score": "4", "feedback": FEEDBACK},
                   telemetry={"pastes": 2, "pasted_chars": 40})  # 40 of 69: over half
    light = submit(batch, bob, {"score": "4", "feedback": OTHER_FEEDBACK},
                   telemetry={"pastes": 1, "pasted_chars": 10})
    assert codes(heavy) == ["paste_heavy"] and codes(light) == []
    choice = submit(make_batch(1, n=1), carol, {"choice": "A"},
                    telemetry={"pastes": 3, "pasted_chars": 500})
    assert codes(choice) == []  # a forced choice has no free text


def test_near_duplicate_of_another_workers_answer_or_of_the_shown_response():
    batch = rubric_batch(n_tasks=2, per_task=3)
    alice, bob, carol, dave = make_workers(4)
    original = submit(batch, alice, {"score": "4", "feedback": FEEDBACK})
    copy = submit(batch, bob, {"score": "4", "feedback": FEEDBACK.upper().replace(".", "!")})
    own = submit(batch, alice, {"score": "4", "feedback": FEEDBACK})  # her own, other task
    parrot = submit(batch, carol, {"score": "5", "feedback": f"{RESPONSE} {RESPONSE[:-1]}!"})
    fresh = submit(batch, dave, {"score": "2", "feedback": OTHER_FEEDBACK})
    assert codes(original) == [] and codes(fresh) == []
    assert codes(copy) == ["near_duplicate"] and "another worker" in copy.flags[0]["detail"]
    assert codes(own) == ["near_duplicate"]  # bob's copy is another worker's answer to her
    assert codes(parrot) == ["near_duplicate"] and "model response" in parrot.flags[0]["detail"]


# --- where the owner sees them --------------------------------------------------------------------

def test_results_export_has_the_telemetry_and_flag_columns(admin_client_):
    batch = rubric_batch(per_task=2)
    alice, bob = make_workers(2)
    submit(batch, alice, {"score": "4", "feedback": FEEDBACK},
           telemetry={"active_ms": 12_345, "blurs": 1, "pastes": 1, "pasted_chars": 69,
                      "keystrokes": 3})
    submit(batch, bob, {"score": "4", "feedback": OTHER_FEEDBACK})
    response = admin_client_.get(reverse("admin:annotation_batch_results", args=[batch.pk, "csv"]))
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    by_flags = {row["flags"]: row for row in rows}
    pasted = by_flags["paste_heavy"]
    assert (pasted["telemetry.active_seconds"], pasted["telemetry.blurs"],
            pasted["telemetry.pastes"], pasted["telemetry.pasted_chars"],
            pasted["telemetry.keystrokes"]) == ("12.345", "1", "1", "69", "3")
    assert by_flags[""]["telemetry.pastes"] == ""  # nothing sent: empty, not 0


def test_review_filter_by_flag_and_approve_every_matching_assignment(admin_client_, alice, bob,
                                                                     django_user_model):
    batch = rubric_batch(per_task=3)
    carol = django_user_model.objects.create_user("carol", password="pw")
    flagged = submit(batch, worker_for_user(alice), {"score": "4", "feedback": FEEDBACK},
                     telemetry={"active_ms": 9_000, "pastes": 1, "pasted_chars": 69})
    copied = submit(batch, worker_for_user(carol), {"score": "4", "feedback": FEEDBACK})
    clean = submit(batch, worker_for_user(bob), {"score": "2", "feedback": OTHER_FEEDBACK})
    url = reverse("admin:annotation_marketplacebatch_review", args=[batch.pk])
    everything = admin_client_.get(url).content.decode()
    assert all(str(a.uuid) in everything for a in (flagged, copied, clean))
    assert "paste_heavy" in everything and "9 s active" in everything
    only = admin_client_.get(url + "?flag=paste_heavy").content.decode()
    assert str(flagged.uuid) in only and str(copied.uuid) not in only
    assert str(clean.uuid) not in only
    any_flag = admin_client_.get(url + "?flag=any").content.decode()
    assert str(flagged.uuid) in any_flag and str(copied.uuid) in any_flag
    assert str(clean.uuid) not in any_flag
    refused = admin_client_.post(url + "?flag=any", {"decision": "reject", "reason": "",
                                                     "matching": "on"})
    assert "needs a reason" in refused.content.decode()
    done = admin_client_.post(url + "?flag=any", {"decision": "reject", "matching": "on",
                                                  "reason": "Copied or pasted feedback."},
                              follow=True)
    assert "2 assignment(s) rejected." in [str(m) for m in done.context["messages"]]
    statuses = dict(Assignment.objects.values_list("pk", "status"))
    assert (statuses[flagged.pk], statuses[copied.pk], statuses[clean.pk]) == (
        "rejected", "rejected", "submitted")
    none_left = admin_client_.post(url + "?flag=any", {"decision": "approve", "matching": "on"})
    assert "No assignment matches the filter." in none_left.content.decode()


def test_the_worker_page_shows_each_assignments_flags_and_telemetry(admin_client_, alice):
    batch = rubric_batch()
    a = submit(batch, worker_for_user(alice), {"score": "4", "feedback": FEEDBACK},
               telemetry={"active_ms": 30_000, "pastes": 2, "pasted_chars": 69, "keystrokes": 4})
    page = admin_client_.get(reverse("admin:annotation_worker_overview", args=[a.worker_id]))
    html = page.content.decode()
    assert "30 s active" in html and "2 pastes, 69 chars" in html and "4 keys" in html
    assert 'class="flag flag-paste_heavy"' in html
    assert "matching" not in html.split('id="worker-review-form"')[1]  # ticked rows only here
