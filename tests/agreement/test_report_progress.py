"""A report builds in the background in every configuration and shows its progress: the build
records its stage and percent on the row, the report page shows a bar fed by a JSON status
endpoint (analysts only), a failed report shows why (escaped) and can be started again, and the
metric runs' progress and errors show in the admin."""
import threading
from types import SimpleNamespace

import pytest
from django.utils import timezone

from agreement.models import MetricRun, Report
from agreement.services import reports as report_service
from agreement.services.reports import report_create, report_restart

pytestmark = pytest.mark.django_db
PARAMS = {"metrics": ["length"], "bootstrap_rounds": 50, "seed": 1}


def _report(**fields) -> Report:
    return Report.objects.create(title="r", params=PARAMS, created_at=timezone.now(), **fields)


def test_the_build_records_each_stage_on_the_row(study, monkeypatch):
    """Every stage is written to the report's row while it runs (read back from the database
    in the middle of the build), in order, with a rising percent; done ends at 100."""
    from agreement.reports import plots

    seen = []
    real_progress = report_service.report_progress

    def recording(report_id, stage, percent):
        real_progress(report_id, stage, percent)
        row = Report.objects.get(pk=report_id)
        seen.append((row.stage, row.progress, row.status))

    monkeypatch.setattr(report_service, "report_progress", recording)
    real_render = plots.render_all
    during_plots = {}

    def render_all(data, extra):
        row = Report.objects.get(pk=report.pk)
        during_plots.update(stage=row.stage, progress=row.progress)
        return real_render(data, extra)

    monkeypatch.setattr(plots, "render_all", render_all)
    report = report_create(PARAMS)
    report_service.report_build(report.pk)

    stages = [s for s, _, _ in seen]
    assert stages[0] == "metrics 1/1 (length)"
    for expected in ("loading judgments", "statistics: scores", "statistics: biases",
                     "statistics: agreement matrices",
                     "statistics: accuracy, reliability and ratings",
                     "plots", "writing files"):
        assert expected in stages
    assert stages.index("loading judgments") < stages.index("plots") < stages.index(
        "writing files")
    percents = [p for _, p, _ in seen]
    assert percents == sorted(percents) and 0 < percents[0] < percents[-1] < 100
    assert {status for _, _, status in seen} == {"running"}
    assert during_plots == {"stage": "plots", "progress": report_service.PLOTS_AT}
    report.refresh_from_db()
    assert (report.status, report.progress, report.stage) == ("done", 100, "")


def test_status_endpoint_is_for_analysts_and_reports_progress(analyst_client, alice_client,
                                                              client):
    report = _report(status=Report.Status.RUNNING, stage="metrics 2/5 (rouge_l)", progress=13)
    url = f"/reports/{report.uuid}/status/"
    assert alice_client.get(url).status_code == 403
    assert client.get(url).status_code == 302  # to the login page
    body = analyst_client.get(url).json()
    assert body == {"status": "running", "stage": "metrics 2/5 (rouge_l)", "progress": 13,
                    "error": "", "finished": False}
    Report.objects.filter(pk=report.pk).update(status=Report.Status.DONE, progress=100, stage="")
    assert analyst_client.get(url).json()["finished"] is True
    assert analyst_client.get(f"/reports/{report.uuid}x/status/").status_code == 404


def test_running_report_page_shows_a_self_updating_bar(analyst_client):
    report = _report(status=Report.Status.RUNNING, stage="statistics: ratings", progress=66)
    page = analyst_client.get(f"/reports/{report.uuid}/").content.decode()
    assert '<progress id="progress-bar" max="100" value="66">' in page
    assert "statistics: ratings" in page and "66%" in page
    assert f'data-status-url="/reports/{report.uuid}/status/"' in page
    assert "/static/agreement/report_progress.js" in page
    # without JavaScript the page reloads itself
    assert '<noscript><meta http-equiv="refresh" content="5"></noscript>' in page
    assert 'id="toc"' not in page  # no report yet, so no contents
    listing = analyst_client.get("/reports/").content.decode()
    assert '<progress max="100" value="66" title="statistics: ratings">' in listing


def test_a_finished_report_page_neither_polls_nor_refreshes(analyst_client, study):
    report = report_service.report_generate(PARAMS)
    page = analyst_client.get(f"/reports/{report.uuid}/").content.decode()
    assert 'id="progress"' not in page and "report_progress.js" not in page
    assert 'http-equiv="refresh"' not in page


def test_a_failed_report_says_why_escaped_and_can_start_again(analyst_client, monkeypatch):
    report = _report(status=Report.Status.FAILED, stage="plots", progress=82,
                     error="ValueError: <script>alert(1)</script> bad data")
    page = analyst_client.get(f"/reports/{report.uuid}/").content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt; bad data" in page
    assert "<script>alert(1)" not in page
    assert "during “plots”" in page
    assert f'action="/reports/{report.uuid}/restart/"' in page

    queued = []
    monkeypatch.setattr("agreement.tasks.enqueue_build_report", queued.append)
    from django.db import transaction

    with pytest.MonkeyPatch.context() as m:  # run on_commit callbacks as the request commits
        m.setattr(transaction, "on_commit", lambda fn, using=None, robust=False: fn())
        resp = analyst_client.post(f"/reports/{report.uuid}/restart/")
    assert resp.status_code == 302 and resp["Location"] == f"/reports/{report.uuid}/"
    report.refresh_from_db()
    assert (report.status, report.error, report.stage, report.progress) == ("pending", "", "", 0)
    assert queued == [report.pk]
    # only a failed report restarts; a pending one is left alone and nothing is queued again
    assert report_restart(report) is False and queued == [report.pk]


def test_restart_is_analyst_only_and_post_only(alice_client, analyst_client):
    report = _report(status=Report.Status.FAILED, error="boom")
    assert alice_client.post(f"/reports/{report.uuid}/restart/").status_code == 403
    assert analyst_client.get(f"/reports/{report.uuid}/restart/").status_code == 405
    report.refresh_from_db()
    assert report.status == "failed"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("eager", [True, False], ids=["no-broker-or-eager", "broker"])
def test_generating_never_runs_in_the_request(analyst_client, study, monkeypatch, eager):
    """Without a broker (or with Celery's eager setting) the build runs in a thread of its own;
    with a broker it is only sent. Either way the request answers while the build has not
    run."""
    from agreement import tasks
    from annotation.core.background import wait_for_jobs

    gate, builds, sent = threading.Event(), [], []

    def fake_build(pk):
        builds.append(threading.get_ident())
        gate.wait(20)
        return SimpleNamespace(status="done")

    monkeypatch.setattr(tasks, "report_build", fake_build)
    monkeypatch.setitem(tasks.build_report.app.conf, "task_always_eager", eager)
    monkeypatch.setattr(tasks.build_report, "apply_async", lambda args, **kw: sent.append(args))
    try:
        resp = analyst_client.post("/reports/new/", {"split": "all", "metrics": ["length"],
                                                     "seed": 1, "bootstrap_rounds": 10})
        assert resp.status_code == 302
        report = Report.objects.get()
        assert report.status == "pending"  # the request did not build it
        if eager:
            for _ in range(200):
                if builds:
                    break
                threading.Event().wait(0.05)
            assert builds and builds[0] != threading.get_ident()  # another thread
            assert sent == []
        else:
            assert sent == [(report.pk,)] and builds == []
    finally:
        gate.set()
        wait_for_jobs(30)


def test_metric_run_progress_and_error_in_the_admin(admin_client):
    now = timezone.now()
    running = MetricRun.objects.create(metrics=["length"], total=40, done=10,
                                       status=MetricRun.Status.RUNNING, created_at=now)
    failed = MetricRun.objects.create(metrics=["bleu4"], total=10, status=MetricRun.Status.FAILED,
                                      error="OSError: <b>no WordNet</b>", created_at=now)
    assert running.percent == 25
    page = admin_client.get("/admin/agreement/metricrun/").content.decode()
    assert '<progress max="100" value="25">25%</progress>' in page
    assert "OSError: &lt;b&gt;no WordNet&lt;/b&gt;" in page and "<b>no WordNet</b>" not in page
    detail = admin_client.get(f"/admin/agreement/metricrun/{failed.pk}/change/").content.decode()
    assert '<progress max="100" value="0">' in detail
    report = _report(status=Report.Status.RUNNING, stage="plots", progress=82)
    page = admin_client.get("/admin/agreement/report/").content.decode()
    assert '<progress max="100" value="82">82%</progress> 82% · plots' in page
    change = admin_client.get(f"/admin/agreement/report/{report.pk}/change/")
    assert change.status_code == 200 and "82% · plots" in change.content.decode()
