"""The submitter's loop through real HTTP: the benchmark kit (page and API, who may have it,
what is in it and what is not), the submission page that links it with its help text shown
escaped, the kit's template filled and submitted with no row skipped although instructions
repeat across items, and the submitter's own row and rank on the board."""
import csv
import io
import json
import zipfile

import pytest
from django.contrib.auth.models import Group, User
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from annotation.core.background import wait_for_jobs
from annotation.models import ConversationTurn, Image, Instance, InstanceImage
from judging import rating_cache
from judging.models import EvalModel, Response
from judging.submissions.models import Submission
from tests.judging.judges.conftest import make_instance, make_judge, reference_model

VERDICT = "Step 1: compared.\nOverall, Response A is better."
SAME_QUESTION = "Find the differences between the BEFORE and the AFTER image."


def _user(name, *groups):
    user = User.objects.create_user(name, password="pw-long-enough-1")
    for group in groups:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user


def _client(user):
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client


def _zip(response) -> zipfile.ZipFile:
    assert response.status_code == 200, response.status_code
    assert response["Content-Type"] == "application/zip"
    assert "benchmark-kit.zip" in response["Content-Disposition"]
    return zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))


def _repeated_benchmark(n=9):
    """``n`` pair items asking one question of different images (as VisIT-Bench's families
    do), each with a verified reference the reference model answers; an anchor model too."""
    reference, anchor = reference_model(), EvalModel.objects.create(name="Anchor-7B")
    items = []
    for i in range(n):
        inst = Instance.objects.create(kind=Instance.Kind.MULTI, instruction=SAME_QUESTION,
                                       reference_output=f"Difference number {i}.",
                                       reference_status="verified", stage="done")
        for pos in range(2):
            image = Image.objects.create(source_url=f"https://example.org/pair{i}-{pos}.png")
            InstanceImage.objects.create(instance=inst, image=image, position=pos)
        Response.objects.create(instance=inst, model=reference, text=inst.reference_output)
        Response.objects.create(instance=inst, model=anchor, text=f"anchor says {i}")
        items.append(inst)
    return items


@pytest.fixture
def open_submissions(server, settings):
    judge = make_judge(server, name="sub-judge", concurrency=2)
    server.responder = lambda body: VERDICT
    settings.SUBMISSION_JUDGE = judge.name
    settings.SUBMISSION_BUDGET_CAP = 5.0
    return judge


@pytest.mark.django_db
def test_the_kit_holds_items_turns_images_and_templates_but_no_reference(client):
    single = make_instance(with_file=True, reference="SECRET reference answer")
    formula = Instance.objects.create(instruction="=HYPERLINK(\"http://x\")", stage="done")
    talk = Instance.objects.create(kind=Instance.Kind.CONVERSATION, instruction="Chat",
                                   stage="done")
    for turn in (1, 2, 3):
        ConversationTurn.objects.create(instance=talk, turn=turn, capability="perception",
                                        instruction=f"Turn {turn} question?",
                                        reference_answer=f"SECRET turn {turn}")
    unfinished = Instance.objects.create(instruction="Still being written", stage="captioning")

    kit = _zip(_client(_user("sam", "submitter")).get("/eval/submit/kit.zip"))
    assert {"README.txt", "items.jsonl", "predictions_template.csv",
            "predictions_template.jsonl"} <= set(kit.namelist())
    items = {i["item_id"]: i for i in map(json.loads, kit.read("items.jsonl").splitlines())}
    assert set(items) == {str(single.uuid), str(formula.uuid), str(talk.uuid)}
    assert str(unfinished.uuid) not in items
    assert [t["instruction"] for t in items[str(talk.uuid)]["turns"]] == [
        f"Turn {t} question?" for t in (1, 2, 3)]
    image = single.instance_images.get().image
    shown = items[str(single.uuid)]["images"][0]
    assert shown["url"] == image.source_url
    with default_storage.open(image.file.name, "rb") as stored:
        assert kit.read(shown["file"]) == stored.read()
    everything = b"".join(kit.read(name) for name in kit.namelist())
    assert b"SECRET" not in everything  # references stay on the server

    rows = list(csv.DictReader(io.StringIO(kit.read("predictions_template.csv").decode())))
    assert [(r["item_id"], r["turn"]) for r in rows if r["item_id"] == str(talk.uuid)] == [
        (str(talk.uuid), str(t)) for t in (1, 2, 3)]
    assert len(rows) == 5 and all(r["prediction"] == "" for r in rows)
    by_id = {r["item_id"]: r for r in rows}
    assert by_id[str(formula.uuid)]["instruction"] == "'=HYPERLINK(\"http://x\")"  # formula-safe
    assert json.loads(by_id[str(single.uuid)]["images"]) == [image.source_url]
    jsonl = [json.loads(line) for line in kit.read("predictions_template.jsonl").splitlines()]
    assert [(r["item_id"], r.get("turn")) for r in jsonl] == [
        (r["item_id"], int(r["turn"]) if r["turn"] else None) for r in rows]
    assert "item_id" in kit.read("README.txt").decode()

    without = _zip(_client(_user("ann", "analyst")).get("/eval/submit/kit.zip?images=0"))
    assert not [n for n in without.namelist() if n.startswith("images/")]


@pytest.mark.django_db
def test_who_may_download_the_kit(client):
    make_instance()
    assert client.get("/eval/submit/kit.zip").url.startswith("/accounts/login/")
    assert _client(_user("alice", "annotator")).get("/eval/submit/kit.zip").status_code == 403
    for user in (_user("sam", "submitter"), _user("ann", "analyst"),
                 User.objects.create_user("root", is_staff=True)):
        assert _client(user).get("/eval/submit/kit.zip").status_code == 200
    api = APIClient()
    assert api.get("/api/eval/kit/").status_code == 401
    api.force_authenticate(_user("ben", "annotator"))
    assert api.get("/api/eval/kit/").status_code == 403
    api.force_authenticate(_user("sue", "submitter"))
    response = api.get("/api/eval/kit/", HTTP_ACCEPT="application/zip")
    assert len(json.loads(_zip(response).read("items.jsonl").splitlines()[0])["item_id"]) == 36


@pytest.mark.django_db
def test_the_submission_page_links_the_kit_and_shows_the_model_placeholder(
        client, open_submissions):
    html = _client(_user("sam", "submitter")).get("/eval/submit/").content.decode()
    assert 'href="/eval/submit/kit.zip"' in html
    # the field's help text: the placeholder escaped, not eaten as a tag
    assert "one &#x27;&lt;model&gt; prediction&#x27; column" in html
    assert "one ' prediction' column" not in html and "'<model>" not in html
    assert "Keep each row's <code>item_id</code>" in html


@pytest.mark.django_db(transaction=True)
def test_the_filled_kit_template_is_submitted_with_no_row_skipped_and_ranked(
        open_submissions, settings):
    settings.LEADERBOARD_MIN_MATCHES = 5  # nine matches rank a model
    items = _repeated_benchmark()
    sam = _user("sam", "submitter")
    web = _client(sam)
    kit = _zip(web.get("/eval/submit/kit.zip"))
    rows = list(csv.DictReader(io.StringIO(kit.read("predictions_template.csv").decode())))
    assert len(rows) == len(items)
    for row in rows:
        row["prediction"] = f"My answer for {row['item_id'][:8]}"
    out = io.StringIO()
    writer = csv.DictWriter(out, list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    filled = out.getvalue().encode()

    # The same rows without their item_id are what used to be skipped as ambiguous.
    anonymous = "\n".join(json.dumps({"instruction": SAME_QUESTION, "prediction": "x"})
                          for _ in items).encode()
    response = web.post("/eval/submit/", {"name": "NoIds", "file": SimpleUploadedFile(
        "p.jsonl", anonymous)})
    assert response.status_code == 400 and "matches several instances" in \
        response.content.decode()

    response = web.post("/eval/submit/", {"name": "KitVLM", "file": SimpleUploadedFile(
        "predictions_template.csv", filled)})
    assert response.status_code == 302, response.content.decode()[:2000]
    sub = Submission.objects.get(name="KitVLM")
    assert (sub.rows, sub.responses, sub.unmatched) == (len(items), len(items), [])
    assert wait_for_jobs(60)
    sub.refresh_from_db()
    assert sub.status == Submission.Status.DONE

    status = web.get(response.url).content.decode()
    assert "/eval/submit/board/?judge=sub-judge" in status
    board = web.get("/eval/submit/board/?judge=sub-judge")
    assert board.status_code == 200
    page = board.content.decode()
    assert 'data-model="KitVLM v1"' in page
    mine = next(r for r in rating_cache.leaderboard_page("sub-judge")["board"].rows
                if r["model"] == "KitVLM v1")
    ranked = len(rating_cache.leaderboard_page("sub-judge")["board"].ranked_rows)
    assert ranked == 2 and f"rank {mine['rank']} of 2" in page
    assert "Anchor-7B" not in page and reference_model().name not in page  # others' rows
    assert web.get("/eval/submit/board/?judge=human").status_code == 404
    other = _client(_user("other", "submitter")).get("/eval/submit/board/")
    assert other.status_code == 200 and "KitVLM" not in other.content.decode()


@pytest.mark.django_db(transaction=True)
def test_the_real_visit_bench_multi_image_kit_round_trips_through_the_api(open_submissions):
    from annotation.content.imports.visitbench import import_visitbench
    from judging.services.responses import reference_responses_sync
    from tests.support.shared_data import SHARED_DATA

    path = SHARED_DATA / "visit_bench" / "visit_bench_multi_images.csv"
    if not path.exists():
        pytest.skip(f"{path} not available")
    assert import_visitbench(path).created == 100
    reference_responses_sync()
    api = APIClient()
    api.force_authenticate(_user("sam", "submitter"))
    kit = _zip(api.get("/api/eval/kit/"))
    template = [json.loads(line) for line in kit.read("predictions_template.jsonl").splitlines()]
    instructions = [row["instruction"] for row in template]
    assert len(template) == 100 and len(set(instructions)) < 80  # instructions repeat
    filled = "\n".join(json.dumps({**row, "prediction": f"answer {n}"})
                       for n, row in enumerate(template)).encode()
    response = api.post("/api/eval/submissions/", {"name": "RealKit", "file": SimpleUploadedFile(
        "predictions_template.jsonl", filled)}, format="multipart")
    assert response.status_code == 201, response.json()
    assert (response.json()["rows"], response.json()["responses"],
            response.json()["unmatched"]) == (100, 100, [])
    assert wait_for_jobs(120)


@pytest.mark.django_db
def test_the_kit_holds_the_default_studys_items_only():
    """Submissions go to the default study: another study's finished items are not in its
    kit (a second study's benchmark must not leak to the first one's submitters)."""
    from judging.submissions.kit import benchmark_instances
    from tests.studies.builders import study

    ours = make_instance()
    theirs = Instance.objects.create(instruction="Another study's question", stage="done",
                                     study=study("other-lab"))
    assert ours in benchmark_instances()
    assert theirs not in benchmark_instances()
    assert list(benchmark_instances(theirs.study)) == [theirs]


@pytest.mark.django_db
def test_a_submitters_board_rows_are_their_default_study_models_only():
    """A model of the same name the submitter owns in another study does not make them the
    owner of the default study's row of that name."""
    from judging.submissions.selectors import my_model_names
    from tests.studies.builders import study

    sam = User.objects.create_user("sam-elsewhere")
    EvalModel.objects.create(name="shared-name")  # the default study's, someone else's
    EvalModel.objects.create(name="shared-name", owner=sam, study=study("lab-b"))
    EvalModel.objects.create(name="sams-own", owner=sam)
    assert my_model_names(sam) == {"sams-own"}
