"""The annotator's screen through real requests: errors named by the fields' labels, "task k of
n" over the worker's own tasks, one blocked message with its reason, an hourly rate beside
the reward, and a history in the order of the dates it shows, each dated for the browser."""
import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse

from annotation.engine.hit_types import get_hit_type
from annotation.engine.services.batches import batch_create_from_rows, batch_set_status
from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.submissions import assignment_submit
from annotation.engine.services.workers import worker_block, worker_for_user
from annotation.models import Assignment, Batch
from annotation.providers.services.local_review import local_assignment_reject
from tests.factories import make_batch
from tests.support.homes import submit

pytestmark = pytest.mark.django_db


def test_a_refused_answer_names_its_field_by_the_label_not_the_field_name(alice_client, alice):
    batch = batch_create_from_rows(hit_type="rubric_score", title="Rubric", min_seconds=0,
                                   rows=get_hit_type("rubric_score").example_rows)
    batch_set_status(batch, Batch.Status.ACTIVE)
    lease = task_claim_next(batch=batch, worker=worker_for_user(alice))
    response = alice_client.post(reverse("annotation:assignment", args=[lease.uuid]),
                                 {"score": "3", "feedback": "too short"})
    assert response.status_code == 400
    error = re.search(r'id="form-error">([^<]*)<', response.content.decode()).group(1)
    assert error.startswith("Your feedback: Ensure this value has at least 20 characters")
    assert not re.search(r"(?<!Your )feedback: Ensure", error)


def test_task_k_of_n_counts_the_workers_own_tasks_not_the_batch(alice_client, alice, bob):
    batch = make_batch(5, n=1)
    other = worker_for_user(bob)
    submit(batch, other)
    task_claim_next(batch=batch, worker=other)  # bob: one done, one held
    page = alice_client.get(reverse("annotation:batch_next", args=[batch.uuid]), follow=True)
    html = page.content.decode()
    assert "Task 1 of 3" in html and "of 5" not in html
    home = alice_client.get(reverse("annotation:available")).content.decode()
    assert re.search(r'class="left">\s*3 tasks', home)  # the home page says the same


def test_a_blocked_worker_reads_one_message_with_its_reason(alice_client, alice):
    for _ in range(3):
        make_batch(2, n=1)
    worker_block(worker_for_user(alice), "Too many wrong attention checks", marketplace=False)
    html = alice_client.get(reverse("annotation:available")).content.decode()
    assert html.count("blocked from new work") == 1
    assert "Reason: Too many wrong attention checks" in html
    assert 'id="closed-batches"' not in html and "Start working" not in html


def test_the_hourly_rate_sits_beside_the_reward(alice_client, alice, bob):
    batch = make_batch(4, n=2, reward=Decimal("0.10"))
    html = alice_client.get(reverse("annotation:available")).content.decode()
    # no submissions yet: the HIT type's expected 40 s a task → 90 tasks an hour
    assert re.search(r'class="muted small hourly" title="at the expected time[^"]*">≈ \$9\.00 an '
                     r"hour", html)
    submit(batch, worker_for_user(bob), seconds=30)
    html = alice_client.get(reverse("annotation:available")).content.decode()
    assert re.search(r'title="at the median time">≈ \$12\.00 an hour', html)
    unpaid = make_batch(1, n=1, reward=Decimal("0"))
    card = alice_client.get(reverse("annotation:available")).content.decode().split(
        f'id="batch-{unpaid.uuid}"')[1].split("</article>")[0]
    assert "an hour" not in card


def test_history_is_newest_first_by_the_date_it_shows_with_a_machine_readable_time(
        alice_client, alice):
    me = worker_for_user(alice)
    slow, quick = make_batch(1, n=1), make_batch(1, n=1)
    Batch.objects.filter(pk=slow.pk).update(title="Slow batch")
    Batch.objects.filter(pk=quick.pk).update(title="Quick batch")
    held = task_claim_next(batch=slow, worker=me)  # claimed first, submitted last
    done = task_claim_next(batch=quick, worker=me)
    assignment_submit(assignment=done, data={"choice": "A"},
                      now=done.claimed_at + timedelta(seconds=10))
    assignment_submit(assignment=held, data={"choice": "B"},
                      now=held.claimed_at + timedelta(seconds=600))
    html = alice_client.get(reverse("annotation:my_work")).content.decode()
    assert html.index("Slow batch") < html.index("Quick batch")
    held.refresh_from_db()
    assert f'<time datetime="{held.submitted_at.isoformat()}" data-local>' in html
    assert re.search(r'id="history-zone">[^<]*<span data-local-zone>UTC</span>', html)
    assert "local_time.js" in html


def test_my_work_gives_each_rejection_its_reason_escaped(alice_client, alice):
    me = worker_for_user(alice)
    batch = make_batch(2, n=1)
    explained, silent = submit(batch, me), submit(batch, me)
    local_assignment_reject(explained, reason="Answered <b>A</b> without reading.")
    Assignment.objects.filter(pk=silent.pk).update(status=Assignment.Status.REJECTED)
    html = alice_client.get(reverse("annotation:my_work")).content.decode()
    assert "Reason: Answered &lt;b&gt;A&lt;/b&gt; without reading." in html
    assert "No reason was given." in html
    assert "2 submissions rejected (unpaid): their reasons are in the history below." in html
