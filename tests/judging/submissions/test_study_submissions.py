"""Submissions per study, through real HTTP and a real loopback judge: a submitter of study B
downloads B's kit, fills its template and submits it with no row skipped; the model is B's
alone, judged against B's reference, and its row shows on B's board while the default study's
(A's) boards stay byte-identical. A member of A only gets B's 404s; the study's own judge,
budget cap and daily quota win over the settings; a name in a study belongs to its submitter.
"""
import io
import json
import zipfile

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from annotation.core.background import wait_for_jobs
from annotation.models import Image, Instance, InstanceImage
from judging.judges.models import JudgeRun
from judging.models import Comparison, EvalModel, Response
from judging.submissions.models import Submission
from judging.submissions.services import SubmissionRefused, submission_create
from studies.models import StudyMembership, default_study_id
from tests.judging.judges.conftest import make_judge
from tests.studies import builders

VERDICT = "Step 1: compared.\nOverall, Response A is better."
SHARED = "What colour is the shape in this picture?"  # asked in both studies, of one image


def _instance(study_id, n, *, image=None, instruction=None) -> Instance:
    instance = Instance.objects.create(
        study_id=study_id, instruction=instruction or f"Study {study_id}: what is shape {n}?",
        reference_output=f"Shape {n} is red.", stage="done", reference_status="verified")
    image = image or Image.objects.create(source_url=f"https://example.org/s{study_id}/{n}.png")
    InstanceImage.objects.create(instance=instance, image=image, position=0,
                                 caption="A red square on white.")
    return instance


def _bench(study_id, names=("Anchor-7B",), *, shared_image) -> list[Instance]:
    """Six items in the study (the last asks SHARED of the shared image), each answered by
    the study's reference and its models."""
    reference = EvalModel.objects.create(name="Human reference", study_id=study_id,
                                         is_reference=True)
    models = [EvalModel.objects.create(name=n, study_id=study_id) for n in names]
    instances = [_instance(study_id, n) for n in range(5)]
    instances.append(_instance(study_id, 5, image=shared_image, instruction=SHARED))
    for inst in instances:
        Response.objects.create(instance=inst, model=reference, text=inst.reference_output)
        for m in models:
            Response.objects.create(instance=inst, model=m, text=f"{m.name} on {inst.pk}")
    return instances


def _member(name, study, role="submitter") -> User:
    user = User.objects.create_user(name, password="pw-long-enough-1")
    StudyMembership.objects.create(user=user, study=study, role=role)
    return user


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def two_studies(server, settings):
    """Study A (the default study) with a board of the submission judge, and a private
    study B with its own items, reference and models; the judge is a real HTTP judge."""
    server.responder = lambda body: VERDICT
    judge = make_judge(server, name="sub-judge", concurrency=2)
    settings.SUBMISSION_JUDGE = judge.name
    settings.SUBMISSION_BUDGET_CAP = 5.0
    shared_image = Image.objects.create(source_url="https://example.org/shared.png")
    a_items = _bench(default_study_id(), ("Anchor-7B", "Other-13B"), shared_image=shared_image)
    a_models = {m.name: m for m in EvalModel.objects.in_study(None)}
    builders.voted(None, [(a_models["Anchor-7B"], a_models["Human reference"], "AABAB"),
                          (a_models["Other-13B"], a_models["Human reference"], "BBBAA"),
                          (a_models["Anchor-7B"], a_models["Other-13B"], "ABAAA")] * 3,
                   source=judge.name)
    study_b = builders.study("bench-b")
    b_items = _bench(study_b.pk, ("Baseline-B",), shared_image=shared_image)
    return {"judge": judge, "a_items": a_items, "b": study_b, "b_items": b_items}


def _a_boards(judge) -> list[bytes]:
    """Study A's boards as an analyst downloads them (JSON, CSV, the study API), computed
    afresh (the cache emptied first, so nothing is served from before)."""
    cache.clear()
    admin = User.objects.create_superuser(f"a{User.objects.count()}", password="pw-long-enough-1")
    client, q = _client(admin), f"judge={judge.name}"
    got = [client.get(f"/eval/leaderboard.{fmt}?{q}") for fmt in ("json", "csv")]
    got.append(client.get(f"/eval/leaderboard/scores.json?{q}"))
    got.append(client.get(f"/api/studies/default/leaderboard/?{q}&rounds=50"))
    assert [r.status_code for r in got] == [200] * 4
    assert b"Anchor-7B" in got[0].content and b"Anchor-7B" in got[1].content  # not empty
    return [b"".join(r) if r.streaming else r.content for r in got]


def _filled_template(kit: bytes) -> tuple[list[str], bytes]:
    """The kit's JSONL template with every prediction written in."""
    with zipfile.ZipFile(io.BytesIO(kit)) as zf:
        rows = [json.loads(line) for line in zf.read("predictions_template.jsonl").splitlines()]
    for row in rows:
        row["prediction"] = f"My model's answer to {row['item_id']}."
    return [r["item_id"] for r in rows], "\n".join(json.dumps(r) for r in rows).encode()


@pytest.mark.django_db(transaction=True)
def test_a_submitter_of_b_goes_from_b_kit_to_b_board_and_a_boards_stay_identical(two_studies):
    b, judge = two_studies["b"], two_studies["judge"]
    a_before = _a_boards(judge)
    sam = _client(_member("sam", b))

    kit = sam.get(f"/s/{b.slug}/submit/kit.zip")
    assert kit.status_code == 200 and kit["Content-Type"] == "application/zip"
    item_ids, predictions = _filled_template(b"".join(kit.streaming_content))
    assert sorted(item_ids) == sorted(str(i.uuid) for i in two_studies["b_items"])

    page = sam.post(f"/s/{b.slug}/submit/", {
        "name": "NewVLM", "file": SimpleUploadedFile("preds.jsonl", predictions)})
    submission = Submission.objects.get()
    assert page.status_code == 302
    assert page["Location"] == f"/s/{b.slug}/submit/{submission.uuid}/"
    assert (submission.study_id, submission.rows, submission.responses,
            submission.unmatched) == (b.pk, 6, 6, [])
    model = EvalModel.objects.get(name="NewVLM v1")  # one model of that name, anywhere
    assert model.study_id == b.pk and submission.run.study_id == b.pk
    assert set(Response.objects.filter(model=model).values_list("instance__study", flat=True)) \
        == {b.pk}
    b_reference = EvalModel.objects.get(study=b, is_reference=True)
    for c in Comparison.objects.filter(sampling="submission"):
        assert {c.response_a.model_id, c.response_b.model_id} == {model.pk, b_reference.pk}

    assert wait_for_jobs(60)
    submission.refresh_from_db()
    assert submission.status == Submission.Status.DONE
    status = sam.get(f"/s/{b.slug}/submit/{submission.uuid}/").content.decode()
    assert f'href="/s/{b.slug}/board/?judge=sub-judge"' in status
    board = sam.get(f"/s/{b.slug}/board/?judge={judge.name}")
    assert board.status_code == 200  # a private study: its submitter is a member
    html = board.content.decode()
    assert 'class="my-rank" data-model="NewVLM v1"' in html and "Anchor-7B" not in html
    mine = sam.get(f"/s/{b.slug}/submit/board/?judge={judge.name}").content.decode()
    assert 'data-model="NewVLM v1"' in mine
    api = sam.get(f"/api/studies/{b.slug}/leaderboard/?judge={judge.name}&rounds=20").json()
    assert "NewVLM v1" in {r["model"] for r in api["rows"]}
    listed = sam.get(f"/api/studies/{b.slug}/submissions/").json()
    assert [s["model"] for s in listed] == ["NewVLM v1"]

    assert _a_boards(judge) == a_before


@pytest.mark.django_db
def test_b_kit_holds_b_items_only_and_the_old_kit_the_default_study_items(two_studies):
    b = two_studies["b"]
    sam = _client(_member("sam", b))
    for url in (f"/s/{b.slug}/submit/kit.zip?images=0", f"/api/studies/{b.slug}/kit/"):
        response = sam.get(url)
        assert response.status_code == 200, url
        with zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))) as zf:
            items = [json.loads(line) for line in zf.read("items.jsonl").splitlines()]
            assert {"predictions_template.csv", "predictions_template.jsonl"} <= set(zf.namelist())
            assert f"POST it to /api/studies/{b.slug}/submissions/" in zf.read("README.txt").decode()
        assert {i["item_id"] for i in items} == {str(i.uuid) for i in two_studies["b_items"]}
        shared = next(i for i in items if i["instruction"] == SHARED)
        assert [image["url"] for image in shared["images"]] == ["https://example.org/shared.png"]
    admin = User.objects.create_superuser("root", password="pw-long-enough-1")
    old = _client(admin).get("/eval/submit/kit.zip?images=0")
    with zipfile.ZipFile(io.BytesIO(b"".join(old.streaming_content))) as zf:
        items = [json.loads(line) for line in zf.read("items.jsonl").splitlines()]
    a_uuids = set(Instance.objects.filter(study_id=default_study_id())
                  .values_list("uuid", flat=True))
    assert {i["item_id"] for i in items} == {str(u) for u in a_uuids}
    assert {str(i.uuid) for i in two_studies["a_items"]} <= {i["item_id"] for i in items}


@pytest.mark.django_db
def test_a_row_without_item_id_matches_in_the_study_only(two_studies):
    """SHARED is asked of the same image in A and in B: in B's submission it names B's item
    (it would be ambiguous if every study's items were searched)."""
    b = two_studies["b"]
    row = {"instruction": SHARED, "image": "https://example.org/shared.png", "prediction": "Red."}
    sub = submission_create(submitter=_member("sam", b), name="TextOnly", study=b,
                            file_name="p.jsonl", data=json.dumps(row).encode())
    assert (sub.responses, sub.unmatched) == (1, [])
    assert Response.objects.get(model=sub.model).instance == two_studies["b_items"][-1]


@pytest.mark.django_db
def test_a_member_of_a_only_gets_404_on_b(two_studies, django_user_model):
    b = two_studies["b"]
    sam = _member("sam", b)
    sub = submission_create(submitter=sam, name="NewVLM", study=b, file_name="p.jsonl",
                            data=_filled_template_for(two_studies["b_items"]))
    before = (Submission.objects.count(), EvalModel.objects.count())
    for role in ("submitter", "owner"):
        outsider = django_user_model.objects.create_user(f"a-{role}", password="pw-long-enough-1")
        StudyMembership.objects.create(user=outsider, study_id=default_study_id(), role=role)
        client = _client(outsider)
        for url in (f"/s/{b.slug}/submit/", f"/s/{b.slug}/submit/kit.zip",
                    f"/s/{b.slug}/submit/board/", f"/s/{b.slug}/submit/{sub.uuid}/",
                    f"/s/{b.slug}/submit/{sub.uuid}/status.json",
                    f"/api/studies/{b.slug}/submissions/", f"/api/studies/{b.slug}/kit/"):
            response = client.get(url)
            assert response.status_code == 404, (role, url)
            assert b.name.encode() not in response.content
        posted = client.post(f"/api/studies/{b.slug}/submissions/", {
            "name": "Intruder", "file": SimpleUploadedFile("p.jsonl", b'{"prediction": "x"}')})
        assert posted.status_code == 404
        assert client.post(f"/s/{b.slug}/submit/", {"name": "Intruder"}).status_code == 404
        # A's own submit page is theirs (the default study's old URL, and under /s/).
        if role == "submitter":
            assert client.get("/s/default/submit/").status_code == 200
    assert (Submission.objects.count(), EvalModel.objects.count()) == before
    # Another submitter of B does not see sam's submission either.
    other = _client(_member("other", b))
    assert other.get(f"/s/{b.slug}/submit/{sub.uuid}/").status_code == 404
    assert other.get(f"/api/studies/{b.slug}/submissions/").json() == []


def _filled_template_for(instances) -> bytes:
    return "\n".join(json.dumps({"item_id": str(i.uuid), "prediction": f"answer {i.pk}"})
                     for i in instances).encode()


@pytest.mark.django_db
def test_the_study_judge_cap_and_daily_quota_win_over_the_settings(two_studies, server,
                                                                     settings):
    b, items = two_studies["b"], two_studies["b_items"]
    own_judge = make_judge(server, name="b-judge")
    b.submission_judge, b.submissions_per_day = own_judge.name, 1
    b.save()
    settings.SUBMISSION_JUDGE = ""  # closed in the default study, open in B
    settings.SUBMISSIONS_PER_DAY = 50
    sam = _member("sam", b)
    StudyMembership.objects.create(user=sam, study_id=default_study_id(), role="submitter")
    data = _filled_template_for(items)
    with pytest.raises(SubmissionRefused, match="Submissions are closed"):
        submission_create(submitter=sam, name="NewVLM", file_name="p.jsonl",
                          data=_filled_template_for(two_studies["a_items"]))
    first = submission_create(submitter=sam, name="NewVLM", study=b, file_name="p.jsonl",
                              data=data)
    assert first.run.judge == own_judge
    Submission.objects.filter(pk=first.pk).update(status=Submission.Status.DONE)
    before = (Submission.objects.count(), JudgeRun.objects.count())
    with pytest.raises(SubmissionRefused, match="At most 1 submissions per day"):
        submission_create(submitter=sam, name="NewVLM", study=b, file_name="p.jsonl", data=data)
    page = _client(sam).get(f"/s/{b.slug}/submit/").content.decode()
    assert "1 submissions per day" in page and "b-judge" in page
    b.submissions_per_day, b.submission_budget_cap = 5, "0.000001"
    b.save()
    settings.SUBMISSION_BUDGET_CAP = 5.0
    with pytest.raises(SubmissionRefused, match=r"over this study's cap of \$0\.00"):
        submission_create(submitter=sam, name="NewVLM", study=b, file_name="p.jsonl", data=data)
    assert (Submission.objects.count(), JudgeRun.objects.count()) == before


@pytest.mark.django_db
def test_a_name_in_a_study_belongs_to_its_submitter(two_studies):
    b, items = two_studies["b"], two_studies["b_items"]
    sam, eve = _member("sam", b), _member("eve", b)
    StudyMembership.objects.create(user=eve, study_id=default_study_id(), role="submitter")
    submission_create(submitter=sam, name="NewVLM", study=b, file_name="p.jsonl",
                      data=_filled_template_for(items))
    before = (Submission.objects.count(), EvalModel.objects.count(), Response.objects.count())
    api = _client(eve).post(f"/api/studies/{b.slug}/submissions/", {
        "name": "newvlm", "file": SimpleUploadedFile("p.jsonl", _filled_template_for(items))})
    assert api.status_code == 400
    assert "belongs to another submitter; choose another name" in api.json()["detail"]
    assert "sam" not in api.json()["detail"]
    assert (Submission.objects.count(), EvalModel.objects.count(),
            Response.objects.count()) == before
    # The same name in another study is another line: eve's to start.
    elsewhere = submission_create(submitter=eve, name="NewVLM", file_name="p.jsonl",
                                  data=_filled_template_for(two_studies["a_items"]))
    assert (elsewhere.model.name, elsewhere.model.study_id, elsewhere.model.owner) == \
        ("NewVLM v1", default_study_id(), eve)
