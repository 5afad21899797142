"""'/' sends each role home; the annotator's home says, per batch, what the work is, what it
pays, how long it takes and how much of it is left for them — in a fixed number of queries."""
from decimal import Decimal

import pytest
from django.urls import reverse

from annotation.engine.services.batches import batch_set_status
from annotation.engine.services.workers import worker_block, worker_for_user
from annotation.models import Batch, Qualification, QualificationGrant
from tests.factories import make_batch, make_workers
from tests.support.homes import submit

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("who,where", [
    ("alice", "annotation:available"), ("analyst", "homes:analyst"),
    ("admin", "homes:dashboard")])
def test_slash_sends_each_role_to_its_own_home(client, request, who, where):
    client.force_login(request.getfixturevalue(who))
    response = client.get("/")
    assert response.status_code == 302 and response.url == reverse(where)
    assert client.get(response.url).status_code == 200


def test_slash_sends_anonymous_to_sign_in(client):
    response = client.get("/")
    assert response.status_code == 302 and response.url.startswith(reverse("login"))


def test_several_roles_land_on_the_widest_home_and_the_nav_links_every_home(client, admin):
    from django.contrib.auth.models import Group

    admin.groups.add(Group.objects.get_or_create(name="annotator")[0])
    client.force_login(admin)
    assert client.get("/").url == reverse("homes:dashboard")
    html = client.get(reverse("homes:dashboard")).content.decode()
    for name in ("homes:dashboard", "homes:analyst", "annotation:available",
                 "annotation:my_work"):
        assert f'href="{reverse(name)}"' in html, name


def test_a_user_without_a_role_gets_a_403_that_says_why(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("nobody", password="x"))
    response = client.get("/")
    assert response.status_code == 403
    assert "no role yet" in response.content.decode()


def test_home_shows_type_reward_estimate_and_what_is_left_for_me(alice_client, alice):
    batch = make_batch(3, n=2, reward=Decimal("0.25"), min_seconds=20)
    html = alice_client.get(reverse("annotation:available")).content.decode()
    assert "Which response is better?" in html  # the HIT type's title, not its slug
    assert "$0.25" in html
    assert "at least 20 s" in html and "minimum time; no submissions yet" in html
    assert '<dd class="left">3 tasks</dd>' in html and "Start working" in html
    # Others' submissions give the median. Task 1 is full (two others), task 2 is mine:
    # only task 3 is left for me.
    w1, w2 = make_workers(2)
    submit(batch, w1, seconds=40)
    submit(batch, w2, seconds=100)
    submit(batch, worker_for_user(alice), seconds=61)
    html = alice_client.get(reverse("annotation:available")).content.decode()
    assert "about 61 s" in html and "median of 3 submitted tasks" in html
    assert '<dd class="left">1 task</dd>' in html


def test_a_batch_with_nothing_left_for_me_is_listed_but_not_offered(alice_client, alice):
    mine = make_batch(1, n=3)
    full = make_batch(1, n=1)
    submit(mine, worker_for_user(alice))  # done by me; slots remain for others
    submit(full, make_workers(1)[0])  # every slot taken by someone else
    html = alice_client.get(reverse("annotation:available")).content.decode()
    start = reverse("annotation:batch_next", args=[mine.uuid])
    assert start not in html and reverse("annotation:batch_next", args=[full.uuid]) not in html
    assert "Nothing left for you" in html and mine.title in html and full.title in html


def test_a_held_task_counts_as_left_and_offers_to_continue(alice_client, alice):
    from annotation.engine.services.claims import task_claim_next

    batch = make_batch(1, n=1)
    task_claim_next(batch=batch, worker=worker_for_user(alice))
    html = alice_client.get(reverse("annotation:available")).content.decode()
    assert "Continue your task" in html and '<dd class="left">1 task</dd>' in html


def test_qualification_and_block_are_shown_not_offered(alice_client, alice):
    qual = Qualification.objects.create(name="Chart reader")
    gated = make_batch(2, n=1, required_qualification=qual)
    html = alice_client.get(reverse("annotation:available")).content.decode()
    assert "Needs the “Chart reader” qualification." in html
    assert reverse("annotation:batch_next", args=[gated.uuid]) not in html
    QualificationGrant.objects.create(qualification=qual, worker=worker_for_user(alice),
                                      score=1.0, granted_at=gated.created_at)
    html = alice_client.get(reverse("annotation:available")).content.decode()
    assert reverse("annotation:batch_next", args=[gated.uuid]) in html
    worker_block(worker_for_user(alice), "too fast")
    html = alice_client.get(reverse("annotation:available")).content.decode()
    assert reverse("annotation:batch_next", args=[gated.uuid]) not in html
    assert "blocked" in html


def test_paused_and_draft_batches_are_not_listed(alice_client):
    paused = make_batch(1)
    batch_set_status(paused, Batch.Status.PAUSED)
    draft = make_batch(1, activate=False)
    html = alice_client.get(reverse("annotation:available")).content.decode()
    assert paused.title not in html and draft.title not in html


def test_home_query_count_does_not_grow_with_batches(alice_client, django_assert_max_num_queries):
    workers = make_workers(2)
    for _ in range(6):
        batch = make_batch(2, n=2, min_seconds=5)
        submit(batch, workers[0])
    alice_client.get(reverse("annotation:available"))  # the worker row is created once
    with django_assert_max_num_queries(10):
        response = alice_client.get(reverse("annotation:available"))
    assert response.content.decode().count("Start working") == 6


def test_user_text_on_the_home_is_escaped(alice_client):
    make_batch(1, description="<script>alert(1)</script>")
    html = alice_client.get(reverse("annotation:available")).content.decode()
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;" in html


# --------------------------------------------------------------------------- task pages
REFUSED_ANSWERS = {  # hit type → (posted answer, inputs that must come back checked)
    "pairwise_ab": ({"choice": "B"}, ['id="choice-B"']),
    "multiturn_ab": ({"turn1": "A", "turn2": "B", "overall": "B"},
                     ['id="turn1-A"', 'id="turn2-B"', 'id="overall-B"']),
    "rubric_score": ({"score": "4", "feedback": "Counts right but misses the pear."},
                     ['id="score-4"']),
    "feedback_ab": ({"choice": "B"}, ['id="choice-B"']),
}


@pytest.mark.parametrize("hit_type", sorted(REFUSED_ANSWERS))
def test_a_refused_submit_keeps_every_choice(alice_client, hit_type):
    """Submitted too fast: the 400 page comes back with the answers already given."""
    from annotation.engine.services.batches import batch_create_from_rows
    from tests.support.homes import INLINE_ROWS

    batch = batch_create_from_rows(hit_type=hit_type, title="t", rows=[INLINE_ROWS[hit_type]],
                                   assignments_per_task=1, min_seconds=600)
    batch_set_status(batch, Batch.Status.ACTIVE)
    url = alice_client.get(reverse("annotation:batch_next", args=[batch.uuid])).url
    answer, checked = REFUSED_ANSWERS[hit_type]
    response = alice_client.post(url, answer)
    html = response.content.decode()
    assert response.status_code == 400 and 'id="form-error"' in html
    for input_id in checked:
        tag = html[html.index(input_id):]
        assert "checked" in tag[:tag.index(">")], input_id
    assert html.count("checked") == len(checked)  # and nothing else
    if "feedback" in answer:
        assert f">{answer['feedback']}</textarea>" in html


def test_local_work_shows_the_position_a_marketplace_hit_does_not(alice_client, client):
    from urllib.parse import urlencode

    local = make_batch(2, n=1)
    html = alice_client.get(alice_client.get(
        reverse("annotation:batch_next", args=[local.uuid])).url).content.decode()
    assert "Task 1 of 2" in html and 'id="task-progress"' in html
    market = make_batch(45, n=1)
    from tests.factories import publish_on_mturk

    publish_on_mturk(market)
    task = market.tasks.order_by("position").first()
    arrival = client.get(reverse("annotation:mturk_task", args=[task.uuid]) + "?" + urlencode(
        {"assignmentId": "ASG1", "hitId": "3HIT1", "workerId": "W1",
         "turkSubmitTo": "https://workersandbox.mturk.com"}))
    page = client.get(arrival.url)
    html = page.content.decode()
    assert page.status_code == 200 and 'id="hit-form"' in html
    assert "of 45" not in html and 'id="task-position"' not in html
    assert 'id="task-progress"' not in html
    preview = client.get(reverse("annotation:mturk_task", args=[task.uuid]) + "?"
                         + urlencode({"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE",
                                      "hitId": "3HIT1"})).content.decode()
    assert "Preview" in preview and "of 45" not in preview
