"""A study's batches, judge runs, reports and metric runs in the API under
/api/studies/<slug>/, through HTTP: what an owner or analyst makes there belongs to the
study, lists show only its rows, another study's object and every route for a non-member are
404s, and the old routes keep serving what they served."""
import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from agreement.models import MetricRun, Report
from annotation.models import Batch
from judging.judges.models import JudgeRun
from studies.selectors import study_default
from tests.factories import make_batch, pairwise_rows
from tests.judging.judges.conftest import make_judge
from tests.studies import builders
from tests.studies.test_pages import _member

pytestmark = pytest.mark.django_db


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _listed(response, key="uuid") -> list[str]:
    body = response.json()
    return [row[key] for row in (body["results"] if isinstance(body, dict) else body)]


def _made_in(study, **extra):
    """One of each object in ``study`` (None: the default study), by the models directly."""
    now = timezone.now()
    study_id = study.pk if study else study_default().pk
    batch = make_batch(1, n=1, activate=False)
    Batch.objects.filter(pk=batch.pk).update(study_id=study_id)
    judge = extra.get("judge")
    return {
        "batches": batch.uuid,
        "reports": Report.objects.create(title=f"r{study_id}", created_at=now, data={},
                                         status=Report.Status.DONE, study_id=study_id).uuid,
        "metric-runs": MetricRun.objects.create(metrics=["bleu4"], created_at=now,
                                                study_id=study_id).uuid,
        "judge-runs": JudgeRun.objects.create(judge=judge, scope="comparisons", created_at=now,
                                              study_id=study_id).uuid if judge else None,
    }


def test_an_owner_creates_a_batch_in_the_study_and_lists_only_its_batches(bench, owner, admin):
    base = f"/api/studies/{bench.slug}/batches/"
    default_batch = make_batch(1, n=1)
    created = _api(owner).post(base, {"hit_type": "pairwise_ab", "title": "B via API",
                                      "assignments_per_task": 2, "rows": pairwise_rows(2)},
                               format="json")
    assert created.status_code == 201, created.content
    batch = Batch.objects.get(uuid=created.data["uuid"])
    assert batch.study == bench and batch.tasks.count() == 2
    assert _listed(_api(owner).get(base)) == [str(batch.uuid)]
    assert _api(owner).get(f"{base}{batch.uuid}/progress/").json()["slots"] == 4
    assert _api(owner).post(f"{base}{batch.uuid}/status/active/").json()["status"] == "active"
    download = _api(owner).get(f"{base}{batch.uuid}/results.csv")
    assert download.status_code == 200 and download["Content-Type"].startswith("text/csv")
    # The default study's batch is a 404 here, and the old route still lists every batch.
    assert _api(owner).get(f"{base}{default_batch.uuid}/").status_code == 404
    assert _api(owner).get(f"{base}{default_batch.uuid}/results.csv").status_code == 404
    old = set(_listed(_api(admin).get("/api/batches/")))
    assert old == {str(batch.uuid), str(default_batch.uuid)}
    assert _api(owner).get("/api/batches/").status_code == 403  # no deployment-wide role


def test_an_owner_starts_a_judge_run_in_the_study(judge_server, bench, owner, analyst,
                                                  django_user_model):
    ms = builders.models(bench, "j1", "j2")
    builders.voted(bench, [(ms["j1"], ms["j2"], "A")] * 2)
    builders.voted(None, [tuple(builders.models(None, "d1", "d2").values()) + ("A",)])
    judge = make_judge(judge_server)
    base = f"/api/studies/{bench.slug}/judge-runs/"
    created = _api(owner).post(base, {"judge": str(judge.uuid), "budget": "5"}, format="json")
    assert created.status_code == 201, created.content
    run = JudgeRun.objects.get(uuid=created.json()["run"])
    assert run.study == bench and run.units_total == 4  # its 2 items, both orders
    default_run = _made_in(None, judge=judge)["judge-runs"]
    assert _listed(_api(owner).get(base), "run") == [str(run.uuid)]
    assert _api(owner).get(f"{base}{default_run}/").status_code == 404
    # The old route is the default study's; the study's analyst reads but may not cancel.
    old = _listed(_api(analyst).get("/api/judges/runs/"), "run")
    assert old == [str(default_run)]
    analyst_b = _member(django_user_model, "analyst-b", bench, "analyst")
    assert _api(analyst_b).get(f"{base}{run.uuid}/progress/").status_code == 200
    assert _api(analyst_b).post(f"{base}{run.uuid}/cancel/").status_code == 404
    assert JudgeRun.objects.get(pk=run.pk).status != JudgeRun.Status.CANCELLED
    cancelled = _api(owner).post(f"{base}{run.uuid}/cancel/")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"


def test_an_analyst_starts_a_report_and_a_metric_run_in_the_study(
        bench, django_user_model, analyst, held_report_builds):
    analyst_b = _member(django_user_model, "analyst-b", bench, "analyst")
    ms = builders.models(bench, "m1", "m2")
    builders.voted(bench, [(ms["m1"], ms["m2"], "AAB")] * 3)
    default = _made_in(None)
    base = f"/api/studies/{bench.slug}"
    report = _api(analyst_b).post(f"{base}/reports/", {"bootstrap_rounds": 0, "metrics": [],
                                                       "title": "B report"}, format="json")
    assert report.status_code == 202, report.content
    assert Report.objects.get(uuid=report.json()["uuid"]).study == bench
    run = _api(analyst_b).post(f"{base}/metric-runs/", {"metrics": ["bleu4"]}, format="json")
    assert run.status_code == 202, run.content
    assert MetricRun.objects.get(uuid=run.json()["uuid"]).study == bench
    for kind, made in (("reports", report), ("metric-runs", run)):
        listing = _listed(_api(analyst_b).get(f"{base}/{kind}/"))
        assert listing == [made.json()["uuid"]], kind
        assert _api(analyst_b).get(f"{base}/{kind}/{default[kind]}/").status_code == 404
        old = _listed(_api(analyst).get(f"/api/agreement/{kind}/"))
        assert old == [str(default[kind])], kind
    assert _api(analyst_b).get(f"{base}/batches/").status_code == 404  # batches: owners


def test_a_member_of_another_study_gets_404_on_every_route(judge_server, bench, owner,
                                                           django_user_model):
    made = _made_in(bench, judge=make_judge(judge_server))
    elsewhere = builders.study("elsewhere")
    stranger = _member(django_user_model, "owner-elsewhere", elsewhere, "owner")
    base = f"/api/studies/{bench.slug}"
    gets = [f"{base}/{kind}/" for kind in made]
    gets += [f"{base}/{kind}/{uuid}/" for kind, uuid in made.items()]
    gets += [f"{base}/batches/{made['batches']}/progress/",
             f"{base}/batches/{made['batches']}/results.csv",
             f"{base}/judge-runs/{made['judge-runs']}/progress/",
             f"{base}/reports/{made['reports']}/json/"]
    posts = [f"{base}/{kind}/" for kind in made]
    posts += [f"{base}/batches/{made['batches']}/status/active/",
              f"{base}/judge-runs/{made['judge-runs']}/cancel/"]
    for path in gets:
        assert _api(owner).get(path).status_code == 200, path  # the study's owner may
        assert _api(stranger).get(path).status_code == 404, path
        assert APIClient().get(path).status_code == 404, path  # anonymous too
    counts = (Batch.objects.count(), JudgeRun.objects.count(), Report.objects.count(),
              MetricRun.objects.count())
    for path in posts:
        assert _api(stranger).post(path, {}, format="json").status_code == 404, path
    assert _api(stranger).delete(f"{base}/reports/{made['reports']}/").status_code == 404
    assert counts == (Batch.objects.count(), JudgeRun.objects.count(), Report.objects.count(),
                      MetricRun.objects.count())
    assert Batch.objects.get(uuid=made["batches"]).status == Batch.Status.DRAFT
    # Their own study's routes answer them, empty.
    assert _listed(_api(stranger).get(f"/api/studies/{elsewhere.slug}/batches/")) == []
