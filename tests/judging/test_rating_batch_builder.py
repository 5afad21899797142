"""Rating batches built from a selection — rubric scores of responses, which of two feedbacks
on the same response is better — through the service, the admin actions and the command:
all or nothing, feedback sides at random, and the tasks they make work end to end."""
from decimal import Decimal

import pytest
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.engine.services.batches import batch_set_status
from annotation.models import Batch, Task
from judging.models import Judgment
from judging.services.judgments.record import judgment_record
from judging.services.rating_batches import (
    RatingBatchError,
    feedback_batch_create,
    rubric_batch_create,
)
from tests.judging import builders

pytestmark = pytest.mark.django_db


def _rated_response(model="LLaVA", *, rubric=True, kind="single"):
    inst = builders.instance(kind=kind)
    if rubric:
        builders.rubric(inst)
    return builders.respond(inst, builders.models(model)[model])


def _score(response, source, score=3.0, feedback=None):
    return judgment_record(
        source=source, annotator=f"{source}@1", kind=Judgment.Kind.SCORE, response=response,
        score=score, feedback=feedback if feedback is not None else f"{source} explains {score}.",
        created_at=timezone.now())


def _nothing_written():
    return not Batch.objects.exists() and not Task.objects.exists()


# --------------------------------------------------------------------------- service


def test_rubric_batch_has_one_task_per_response_with_n_reward_and_lease():
    responses = [_rated_response(), _rated_response("BLIP")]
    batch = rubric_batch_create(responses=responses, title="Rubric", assignments_per_task=3,
                                reward=Decimal("0.20"), lease_seconds=600)
    assert (batch.hit_type, batch.assignments_per_task, batch.reward, batch.lease_seconds,
            batch.status) == ("rubric_score", 3, Decimal("0.20"), 600, Batch.Status.DRAFT)
    assert [(t.payload["response"], t.payload["rubric"])
            for t in batch.tasks.order_by("position")] == \
        [(str(r.uuid), str(r.instance.rubrics.get().uuid)) for r in responses]


def test_a_response_without_a_rubric_refuses_the_whole_selection():
    bare = _rated_response(rubric=False)
    with pytest.raises(RatingBatchError, match=f"no rubric.*{bare.uuid}"):
        rubric_batch_create(responses=[_rated_response(), bare], title="Rubric")
    assert _nothing_written()
    with pytest.raises(RatingBatchError, match="at least one"):
        rubric_batch_create(responses=[], title="Rubric")


def test_feedback_batch_pairs_judgments_of_the_same_response_sides_at_random():
    pairs = []
    for _ in range(16):
        response = _rated_response()
        pairs.append({str(_score(response, "prometheus").uuid),
                      str(_score(response, "gpt4v").uuid)})
    first_sources = []
    batch = feedback_batch_create(judgments=Judgment.objects.all(), title="Feedback", seed=3)
    tasks = list(batch.tasks.order_by("position"))
    assert batch.hit_type == "feedback_ab" and len(tasks) == 16
    for task in tasks:
        shown = {task.payload["judgment_a"], task.payload["judgment_b"]}
        assert shown in pairs
        first_sources.append(Judgment.objects.get(uuid=task.payload["judgment_a"]).source)
    # Neither judge always sits on side A (16 fair draws all alike: p = 2 / 65,536).
    assert set(first_sources) == {"prometheus", "gpt4v"}


def test_three_judgments_of_one_response_make_every_pair():
    response = _rated_response()
    judgments = [_score(response, s) for s in ("a", "b", "c")]
    batch = feedback_batch_create(judgments=judgments, title="Feedback")
    shown = [frozenset((t.payload["judgment_a"], t.payload["judgment_b"]))
             for t in batch.tasks.all()]
    assert len(set(shown)) == 3


@pytest.mark.parametrize("bad, message", [
    ("alone", "only one selected score judgment"),
    ("pairwise", "not scores of a response"),
    ("silent", "no feedback"),
])
def test_a_selection_that_cannot_make_a_feedback_batch_writes_nothing(bad, message):
    response = _rated_response()
    selection = [_score(response, "a"), _score(response, "b")]
    other = _rated_response("BLIP")
    if bad == "alone":
        selection.append(_score(other, "a"))
    elif bad == "pairwise":
        selection.append(judgment_record(source="j", annotator="j@1", choice="A",
                                         comparison=_comparison(), created_at=timezone.now()))
    else:
        selection += [_score(other, "a"), _score(other, "b", feedback="")]
    with pytest.raises(RatingBatchError, match=message):
        feedback_batch_create(judgments=selection, title="Feedback")
    assert _nothing_written()


def _comparison():
    from judging.models import Comparison

    inst, ms = builders.instance(), builders.models("X", "Y")
    a, b = builders.respond(inst, ms["X"]), builders.respond(inst, ms["Y"])
    return Comparison.objects.create(instance=inst, response_a=a, response_b=b)


# --------------------------------------------------------------------------- end to end


def _work(client, batch):
    batch_set_status(batch, Batch.Status.ACTIVE)
    claimed = client.get(reverse("annotation:batch_next", args=[batch.uuid]))
    assert claimed.status_code == 302
    return claimed.url


def test_the_built_batches_tasks_render_and_a_submit_records_a_judgment(alice_client):
    response = _rated_response()
    rubric = rubric_batch_create(responses=[response], title="Rubric", assignments_per_task=1,
                                 min_seconds=0)
    url = _work(alice_client, rubric)
    page = alice_client.get(url)
    assert page.status_code == 200 and response.text in page.content.decode()
    alice_client.post(url, {"score": "4", "feedback": "Reads the chart right, misses units."})
    score = Judgment.objects.get(kind=Judgment.Kind.SCORE, source=Judgment.HUMAN)
    assert (score.response, score.score, score.worker.user.username) == (response, 4.0, "alice")
    assert score.meta["rubric"] == str(response.instance.rubrics.get().uuid)

    machine = _score(response, "prometheus", 2.0, "Gets the tallest bar wrong.")
    feedback = feedback_batch_create(judgments=[score, machine], title="Feedback",
                                     assignments_per_task=1, min_seconds=0)
    url = _work(alice_client, feedback)
    html = alice_client.get(url).content.decode()
    assert "Gets the tallest bar wrong." in html and "misses units" in html
    alice_client.post(url, {"choice": "A"})
    vote = Judgment.objects.get(kind=Judgment.Kind.FEEDBACK)
    shown_a = feedback.tasks.get().payload["judgment_a"]
    assert (vote.response, vote.choice, vote.meta["judgment_a"]) == (response, "A", shown_a)


# --------------------------------------------------------------------------- admin actions


def _action(client, model, action, pks, **form):
    url = reverse(f"admin:judging_{model}_changelist")
    data = {"action": action, "_selected_action": pks}
    if form:
        data |= {"apply": "yes", **form}
    else:
        data["index"] = 0
    return client.post(url, data)


FORM = {"title": "From the admin", "assignments_per_task": 2, "reward": "0.15",
        "lease_seconds": 900}


def test_response_action_asks_for_the_batch_fields_then_builds_it(admin_client_):
    responses = [_rated_response(), _rated_response("BLIP")]
    pks = [r.pk for r in responses]
    form = _action(admin_client_, "response", "build_rubric_batch", pks)
    assert form.status_code == 200 and not Batch.objects.exists()
    html = form.content.decode()
    assert "Build a batch: rubric scores" in html and 'name="apply"' in html
    assert form.context["form"]["title"].value() == "Rubric scores of 2 responses"
    built = _action(admin_client_, "response", "build_rubric_batch", pks, **FORM)
    batch = Batch.objects.get()
    assert built.status_code == 302 and built.url == reverse("admin:annotation_batch_change",
                                                             args=[batch.pk])
    assert (batch.title, batch.hit_type, batch.assignments_per_task, batch.reward,
            batch.lease_seconds, batch.tasks.count()) == (
        "From the admin", "rubric_score", 2, Decimal("0.15"), 900, 2)


def test_judgment_action_builds_a_feedback_batch_or_says_why_not(admin_client_):
    response = _rated_response()
    pair = [_score(response, "a").pk, _score(response, "b").pk]
    lone = _score(_rated_response("BLIP"), "a").pk
    refused = _action(admin_client_, "judgment", "build_feedback_batch", [*pair, lone], **FORM)
    assert refused.status_code == 302 and _nothing_written()
    listing = admin_client_.get(refused.url)
    assert "only one selected score judgment" in listing.content.decode()
    built = _action(admin_client_, "judgment", "build_feedback_batch", pair, **FORM)
    assert built.status_code == 302
    assert Batch.objects.get().hit_type == "feedback_ab"


def test_staff_who_cannot_add_batches_are_refused_the_action(django_user_model):
    clerk = django_user_model.objects.create_user(username="clerk", password="x", is_staff=True)
    clerk.user_permissions.add(Permission.objects.get(codename="view_response"))
    client = Client()
    client.force_login(clerk)
    response = _rated_response()
    assert _action(client, "response", "build_rubric_batch", [response.pk]).status_code == 403
    assert _action(client, "response", "build_rubric_batch", [response.pk],
                   **FORM).status_code == 403
    assert _nothing_written()


# --------------------------------------------------------------------------- command


def test_command_builds_a_rubric_batch_by_model_and_split():
    wanted = [_rated_response("LLaVA"), _rated_response("LLaVA")]
    _rated_response("BLIP")
    _rated_response("LLaVA", kind="multi")
    call_command("build_rating_batch", "--kind", "rubric", "--model", "LLaVA", "--split",
                 "single", "--title", "LLaVA rubric", "--n", "2")
    batch = Batch.objects.get()
    assert sorted(t.payload["response"] for t in batch.tasks.all()) == \
        sorted(str(r.uuid) for r in wanted)
    assert batch.assignments_per_task == 2


def test_command_builds_a_feedback_batch_from_an_ids_file(tmp_path):
    response = _rated_response()
    pair = [_score(response, "a"), _score(response, "b")]
    _score(_rated_response(), "c")  # not in the file
    ids = tmp_path / "ids.txt"
    ids.write_text(f"# two feedbacks on one answer\n{pair[0].uuid}\n\n{pair[1].uuid}  # b\n")
    call_command("build_rating_batch", "--kind", "feedback", "--ids", str(ids), "--title", "F")
    task = Task.objects.get()
    assert {task.payload["judgment_a"], task.payload["judgment_b"]} == \
        {str(j.uuid) for j in pair}


@pytest.mark.parametrize("args, message", [
    (["--kind", "rubric", "--split", "sideways"], "unknown split"),
    (["--kind", "rubric", "--model", "Nobody"], "no model named"),
    (["--kind", "feedback"], "only one selected score judgment"),
])
def test_command_refuses_a_selection_with_the_reason(args, message, tmp_path):
    _score(_rated_response(rubric=False), "a")
    with pytest.raises(CommandError, match=message):
        call_command("build_rating_batch", *args, "--title", "T")
    assert _nothing_written()


def test_command_refuses_unknown_ids(tmp_path):
    ids = tmp_path / "ids.txt"
    ids.write_text("00000000-0000-4000-8000-000000000000\nnot-an-id\n")
    with pytest.raises(CommandError, match="not an id"):
        call_command("build_rating_batch", "--kind", "rubric", "--ids", str(ids), "--title", "T")
    ids.write_text("00000000-0000-4000-8000-000000000000\n")
    with pytest.raises(CommandError, match="1 ids name no response"):
        call_command("build_rating_batch", "--kind", "rubric", "--ids", str(ids), "--title", "T")
    assert _nothing_written()
