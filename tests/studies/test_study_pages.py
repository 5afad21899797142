"""A study's batches, judge runs, reports and review under /s/<slug>/, its "new study" and
settings pages, and the header's switcher, through HTTP: lists show the study's rows only,
another study's object is a 404, what is made there belongs to the study, links and redirects
stay in it, and the old URLs keep serving the default study."""
import json
from decimal import Decimal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from agreement.models import Report
from annotation.models import Batch
from judging.hits import SHAPES
from judging.judges.models import JudgeRun
from studies.models import Study, StudyMembership
from studies.selectors import study_default
from tests.factories import make_batch
from tests.judging.judges.conftest import make_judge
from tests.studies import builders
from tests.studies.test_pages import _client, _member

pytestmark = pytest.mark.django_db


def _upload(client, url, title="Study B batch"):
    rows = [{"instruction": f"Q{i}?", "image_urls": [SHAPES], "response_a": f"A{i}",
             "response_b": f"B{i}"} for i in (1, 2)]
    content = "".join(json.dumps(r) + "\n" for r in rows).encode()
    return client.post(url, {
        "hit_type": "pairwise_ab", "title": title, "provider": "local",
        "assignments_per_task": 2, "reward": "0.10", "lease_seconds": 1800, "min_seconds": 0,
        "budget": "", "file": SimpleUploadedFile("rows.jsonl", content)})


def test_an_owner_uploads_a_batch_to_their_study_and_sees_only_its_batches(bench, owner, admin):
    default_batch = make_batch(1, n=1)
    answer = _upload(_client(owner), f"/s/{bench.slug}/batches/new/")
    batch = Batch.objects.get(title="Study B batch")
    assert batch.study == bench and batch.tasks.count() == 2
    assert answer["Location"] == f"/s/{bench.slug}/batches/{batch.uuid}/"
    page = _client(owner).get(answer["Location"]).content.decode()
    # Its links stay in the study (review, preview, status form).
    assert f'href="/s/{bench.slug}/batches/{batch.uuid}/review/"' in page
    assert f'action="/s/{bench.slug}/batches/{batch.uuid}/status/"' in page
    listing = _client(owner).get(f"/s/{bench.slug}/batches/").content.decode()
    assert "Study B batch" in listing and default_batch.title not in listing
    # The old pages are the default study's, even for staff; and the other way round.
    old = _client(admin).get("/batches/").content.decode()
    assert default_batch.title in old and "Study B batch" not in old
    assert _client(admin).get(f"/batches/{batch.uuid}/").status_code == 404
    default = study_default().slug
    assert _client(admin).get(f"/s/{default}/batches/{batch.uuid}/").status_code == 404
    assert _client(owner).get(f"/s/{default}/batches/").status_code == 404
    assert _client(owner).get(f"/s/{bench.slug}/batches/{default_batch.uuid}/").status_code == 404


def test_an_analyst_of_the_study_may_read_but_not_manage_its_batches(bench, django_user_model):
    analyst_b = _member(django_user_model, "analyst-b", bench, "analyst")
    assert _client(analyst_b).get(f"/s/{bench.slug}/batches/").status_code == 404
    assert _upload(_client(analyst_b), f"/s/{bench.slug}/batches/new/").status_code == 404
    assert not Batch.objects.filter(study=bench).exists()
    assert _client(analyst_b).get(f"/s/{bench.slug}/reports/").status_code == 200


def test_a_report_started_in_a_study_is_the_studys(bench, django_user_model, analyst,
                                                    held_report_builds):
    analyst_b = _member(django_user_model, "analyst-b", bench, "analyst")
    ms = builders.models(bench, "m1", "m2")
    builders.voted(bench, [(ms["m1"], ms["m2"], "AAB")] * 3)
    answer = _client(analyst_b).post(f"/s/{bench.slug}/reports/new/", {
        "split": "all", "seed": 0, "bootstrap_rounds": 0, "metrics": [], "title": "B report"})
    report = Report.objects.get(title="B report")
    assert report.study == bench
    assert answer["Location"] == f"/s/{bench.slug}/reports/{report.uuid}/"
    page = _client(analyst_b).get(answer["Location"]).content.decode()
    assert f'data-status-url="/s/{bench.slug}/reports/{report.uuid}/status/"' in page
    assert "B report" in _client(analyst_b).get(f"/s/{bench.slug}/reports/").content.decode()
    # The default study's pages know nothing of it.
    assert "B report" not in _client(analyst).get("/reports/").content.decode()
    assert _client(analyst).get(f"/reports/{report.uuid}/").status_code == 404
    assert _client(analyst).get(f"/s/{bench.slug}/reports/").status_code == 404


def test_the_review_lists_the_studys_disputes_and_keeps_its_rulings_there(
        bench, django_user_model, analyst):
    analyst_b = _member(django_user_model, "analyst-b", bench, "analyst")
    ms = builders.models(bench, "b-one", "b-two")
    (disputed,) = builders.voted(bench, [(ms["b-one"], ms["b-two"], "AABB")])
    dm = builders.models(None, "d-one", "d-two")
    (default_item,) = builders.voted(None, [(dm["d-one"], dm["d-two"], "AB")])
    listing = _client(analyst_b).get(f"/s/{bench.slug}/review/").content.decode()
    assert f'href="/s/{bench.slug}/review/{disputed.uuid}/?turn=' in listing
    assert str(default_item.uuid) not in listing
    old = _client(analyst).get("/review/").content.decode()
    assert str(default_item.uuid) in old and str(disputed.uuid) not in old
    assert _client(analyst_b).get(
        f"/s/{bench.slug}/review/{default_item.uuid}/?turn=").status_code == 404
    item = _client(analyst_b).get(f"/s/{bench.slug}/review/{disputed.uuid}/?turn=")
    assert item.status_code == 200
    assert f'action="/s/{bench.slug}/review/{disputed.uuid}/adjudicate/"' in item.content.decode()
    ruled = _client(analyst_b).post(f"/s/{bench.slug}/review/{disputed.uuid}/adjudicate/",
                                    {"turn": "", "choice": "A"})
    assert ruled["Location"] == f"/s/{bench.slug}/review/{disputed.uuid}/?turn="


def test_judge_runs_of_a_study_are_listed_and_started_there(judge_server, bench, owner,
                                                            analyst):
    ms = builders.models(bench, "j1", "j2")
    builders.voted(bench, [(ms["j1"], ms["j2"], "A")] * 2)
    builders.voted(None, [tuple(builders.models(None, "d1", "d2").values()) + ("A",)])
    judge = make_judge(judge_server)
    form = {"judge": judge.uuid, "split": "all", "source": "", "budget": "5", "start": "1"}
    started = _client(owner).post(f"/s/{bench.slug}/judges/new/", form)
    run = JudgeRun.objects.get()
    assert run.study == bench and run.units_total == 4  # its 2 items, both orders
    assert started["Location"] == f"/s/{bench.slug}/judges/runs/{run.uuid}/"
    listing = _client(owner).get(f"/s/{bench.slug}/judges/").content.decode()
    assert f"/s/{bench.slug}/judges/runs/{run.uuid}/" in listing
    assert str(run.uuid) not in _client(analyst).get("/eval/judges/").content.decode()
    assert _client(analyst).get(f"/eval/judges/runs/{run.uuid}/").status_code == 404


def test_staff_create_a_study_and_become_its_owner(admin, analyst):
    answer = _client(admin).post("/s/new/", {"name": "ConvBench", "slug": "convbench",
                                             "description": "Multi-turn", "visibility": "public"})
    study = Study.objects.get(slug="convbench")
    assert answer["Location"] == "/s/convbench/"
    assert (study.name, study.is_public) == ("ConvBench", True)
    assert StudyMembership.objects.filter(user=admin, study=study, role="owner").exists()
    assert _client().get("/s/convbench/board/").status_code == 200  # public: anyone
    before = Study.objects.count()
    for slug in ("convbench", "new", "not a slug"):
        refused = _client(admin).post("/s/new/", {"name": "Again", "slug": slug,
                                                  "visibility": "private"})
        assert refused.status_code == 200 and refused.context["form"].errors["slug"]
    assert Study.objects.count() == before
    assert _client(analyst).get("/s/new/").status_code == 403
    assert _client(analyst).post("/s/new/", {"name": "X", "slug": "x",
                                             "visibility": "private"}).status_code == 403
    assert not Study.objects.filter(slug="x").exists()


def test_an_owner_changes_the_settings_and_a_bad_value_writes_nothing(bench, owner,
                                                                     django_user_model):
    url = f"/s/{bench.slug}/settings/"
    fields = {"name": "Bench B", "visibility": "public", "budget": "250", "fee_rate": "0.2",
              "default_answer_options": "[]", "description": "", "protocol_notes": ""}
    assert _client().get(f"/s/{bench.slug}/board/").status_code == 404
    saved = _client(owner).post(url, fields)
    assert saved["Location"] == url
    bench.refresh_from_db()
    assert (bench.name, bench.is_public, bench.budget) == ("Bench B", True, Decimal("250"))
    assert _client().get(f"/s/{bench.slug}/board/").status_code == 200
    refused = _client(owner).post(url, {**fields, "name": "Renamed", "budget": "-5"})
    assert refused.status_code == 200 and refused.context["form"].errors["budget"]
    for options in ("", "null"):  # no answer options: the empty list, never a null
        assert _client(owner).post(url, {**fields, "default_answer_options": options}
                                   ).status_code == 302
        bench.refresh_from_db()
        assert bench.default_answer_options == []
    refused = _client(owner).post(url, {**fields, "name": "Renamed",
                                        "default_answer_options": '{"A": 1}'})
    assert refused.context["form"].errors["default_answer_options"]
    for number in ("budget", "default_answer_options"):  # past Python's 4,300 digits
        refused = _client(owner).post(url, {**fields, number: "1" * 5000})
        assert refused.status_code == 200 and refused.context["form"].errors[number]
    bench.refresh_from_db()
    assert (bench.name, bench.budget) == ("Bench B", Decimal("250"))
    viewer = _member(django_user_model, "viewer-b", bench, "viewer")
    assert _client(viewer).get(url).status_code == 404
    assert _client(viewer).post(url, {**fields, "name": "Hijacked"}).status_code == 404
    bench.refresh_from_db()
    assert bench.name == "Bench B"


def test_the_home_links_the_pages_and_the_header_switches_studies(bench, owner,
                                                                   django_user_model):
    other = builders.study("other-c")
    StudyMembership.objects.create(user=owner, study=other, role="viewer")
    home = _client(owner).get(f"/s/{bench.slug}/").content.decode()
    for page in ("batches/", "judges/", "reports/", "review/", "settings/"):
        assert f'href="/s/{bench.slug}/{page}"' in home, page
    reports = _client(owner).get(f"/s/{bench.slug}/reports/").content.decode()
    assert 'id="study-switcher"' in reports
    assert 'value="/s/other-c/"' in reports and f'value="/s/{bench.slug}/" selected' in reports
    viewer = _member(django_user_model, "viewer-b", bench, "viewer")
    seen = _client(viewer).get(f"/s/{bench.slug}/").content.decode()
    assert "/batches/" not in seen and "/settings/" not in seen and "/reports/" not in seen
