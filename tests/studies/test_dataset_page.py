"""A study's dataset page and its downloads under /s/<slug>/dataset/, through HTTP: B's page
and every download hold B's rows only, a formula typed by a worker is neutralised in the
CSVs, and a member of another study gets the same 404 as for a study that does not exist."""
import csv
import io

import openpyxl
import pytest

from annotation.models import ConversationTurn, Image, Instance, InstanceImage, ScoreRubric
from judging.models import Response
from studies.models import StudyMembership
from studies.selectors import study_default
from tests.studies import builders
from tests.studies.test_pages import _client, _member

pytestmark = pytest.mark.django_db
ALL = ("items-visitbench.csv", "items-convbench.xlsx", "items-prometheus.jsonl", "items.jsonl",
       "judgments.csv", "judgments.jsonl", "judgments-visitbench.csv")


def _item(study, source, instruction, *, kind="single", images=1, turns=0):
    inst = Instance.objects.create(study=study, source=source, instruction=instruction,
                                   kind=kind, stage="done", reference_status="verified",
                                   external_id=instruction)
    for position in range(images):
        image = Image.objects.create(source_url=f"https://img.example/{instruction}-{position}.png")
        InstanceImage.objects.create(instance=inst, image=image, position=position)
    for n in range(1, turns + 1):
        ConversationTurn.objects.create(instance=inst, turn=n, capability="perception",
                                        instruction=f"{instruction} turn {n}")
    return inst


@pytest.fixture
def two_studies(django_user_model):
    """Study B (analyst) and the default study A, each with items, models and a vote."""
    bench = builders.study("bench-b")
    analyst = _member(django_user_model, "ana-b", bench, "analyst")
    a, b = study_default(), bench
    for study, tag in ((a, "A"), (b, "B")):
        m = builders.models(study, f"model-{tag}1", f"model-{tag}2", reference=f"ref-{tag}")
        builders.voted(study, [(m[f"model-{tag}1"], m[f"model-{tag}2"], "AB")])
        _item(study, "visitbench", f"vb-{tag}", images=2)
        _item(study, "demo-convbench", f"conv-{tag}", kind="conversation", turns=3)
        ScoreRubric.objects.create(instance=_item(study, "prometheus", f"prom-{tag}"),
                                   criteria="Accurate?", **{f"score{n}": f"level {n}"
                                                            for n in range(1, 6)})
    # a worker's formula in B's instruction: the CSVs must not hand it to a spreadsheet
    inst = _item(b, "upload", "=HYPERLINK(\"http://evil\")")
    Response.objects.create(instance=inst, model=m["model-B1"], text="-cmd|calc")
    return a, b, analyst


def test_the_page_counts_b_items_by_source_and_b_models_only(two_studies):
    _, b, analyst = two_studies
    answer = _client(analyst).get(f"/s/{b.slug}/dataset/")
    assert answer.status_code == 200
    page = answer.content.decode()
    for shown in ("model-B1", "model-B2", "ref-B", "VisIT-Bench", "ConvBench", "demo-convbench"):
        assert shown in page
    for hidden in ("model-A1", "model-A2", "ref-A", "vb-A"):
        assert hidden not in page
    assert page.count('id="reference-model"') == 1
    sources = {r["source"]: r for r in answer.context["sources"]}
    assert sources["visitbench"]["items"] == 1 and sources["visitbench"]["images"] == 2
    assert sources["demo-convbench"]["conversations"] == 1
    assert sources["demo-convbench"]["turns"] == 3
    assert sources["upload"]["family"] == "Other"
    assert sources["prometheus"]["family"] == "Prometheus-Vision"
    assert answer.context["total_items"] == 5  # voted()'s item, vb, conv, prom, upload
    counts = {m.name: m.n_responses for m in answer.context["models"]}
    assert counts == {"ref-B": 0, "model-B1": 2, "model-B2": 1}


@pytest.mark.parametrize("name", ALL)
def test_every_download_holds_b_rows_only(two_studies, name):
    _, b, analyst = two_studies
    answer = _client(analyst).get(f"/s/{b.slug}/dataset/{name}")
    assert answer.status_code == 200
    assert f'filename="{b.slug}-{name}"' in answer["Content-Disposition"]
    if name.endswith(".xlsx"):
        sheet = openpyxl.load_workbook(io.BytesIO(answer.content)).active
        text = " ".join(str(c) for row in sheet.iter_rows(values_only=True) for c in row)
    else:
        text = answer.content.decode()
    for a_row in ("model-A1", "model-A2", "vb-A", "conv-A", "prom-A"):
        assert a_row not in text
    expected_b = {"items-visitbench.csv": "vb-B", "items-convbench.xlsx": "conv-B",
                  "items-prometheus.jsonl": "prom-B",
                  "items.jsonl": "conv-B", "judgments.csv": "model-B1",
                  "judgments.jsonl": "model-B1", "judgments-visitbench.csv": "model-B1"}
    if name in expected_b:
        assert expected_b[name] in text


def test_csv_downloads_neutralise_formulas(two_studies):
    _, b, analyst = two_studies
    text = _client(analyst).get(f"/s/{b.slug}/dataset/items-visitbench.csv").content.decode()
    cells = [c for row in csv.reader(io.StringIO(text)) for c in row]
    assert "'=HYPERLINK(\"http://evil\")" in cells
    assert not any(c.startswith("=") for c in cells)


def test_a_member_of_another_study_gets_404_on_page_and_downloads(two_studies,
                                                                   django_user_model):
    a, b, analyst = two_studies
    stranger = _member(django_user_model, "owner-c", builders.study("bench-c"), "owner")
    for url in (f"/s/{b.slug}/dataset/", f"/s/{b.slug}/dataset/judgments.csv"):
        assert _client(analyst).get(url).status_code == 200
        assert _client(stranger).get(url).status_code == 404
    assert _client(stranger).get(f"/s/{a.slug}/dataset/items.jsonl").status_code == 404
    assert _client(stranger).get("/s/no-such-study/dataset/").status_code == 404


def test_b_analyst_cannot_read_the_default_study_dataset(two_studies, admin):
    a, _, analyst = two_studies
    url = f"/s/{a.slug}/dataset/judgments.jsonl"
    assert _client(analyst).get(url).status_code == 404
    assert "model-A1" in _client(admin).get(url).content.decode()  # staff see every study


def test_an_unknown_export_is_a_404_and_a_submitter_cannot_download(two_studies,
                                                                   django_user_model):
    _, b, analyst = two_studies
    assert _client(analyst).get(f"/s/{b.slug}/dataset/judgments.csv").status_code == 200
    assert _client(analyst).get(f"/s/{b.slug}/dataset/secrets.csv").status_code == 404
    submitter = _member(django_user_model, "sub-b", b, "submitter")
    assert _client(submitter).get(f"/s/{b.slug}/dataset/judgments.csv").status_code == 404


def test_the_study_home_links_the_dataset_for_analysts_only(two_studies, django_user_model):
    _, b, analyst = two_studies
    assert f'href="/s/{b.slug}/dataset/"' in _client(analyst).get(f"/s/{b.slug}/").content.decode()
    viewer = _member(django_user_model, "view-b", b, "viewer")
    assert "dataset-link" not in _client(viewer).get(f"/s/{b.slug}/").content.decode()
    assert StudyMembership.objects.filter(study=b).count() == 2
