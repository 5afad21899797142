"""Reports: create (pending), start (create and queue the build: the pages and the API), restart
a failed one, build (the Celery task's body, recording its stage and percent as it goes),
generate (create and build here, for the command and the demo), and write the artefacts to a
directory. ``report_data_compute`` is the one path from parameters to
the report's data: it first scores what the metric cache lacks (``metric_scores_ensure``, the
report's only write), then gathers and computes (``reports.assemble``, reads only).

A report is rebuilt from scratch by ``report_build`` and its files replaced in one transaction,
so a task delivered twice yields the same report, never a half-written one.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from annotation.core.jobs import admit
from annotation.webhooks.services import webhook_emit
from studies.models import study_pk as study_id

from ..jobs import REPORT, report_fingerprint
from ..models import Report, ReportFile
from ..reports.params import ReportParams
from .metric_scores import metric_scores_ensure

log = logging.getLogger(__name__)

Progress = Callable[[str, int], None]  # (stage, percent) -> None
# Where each phase of a build starts, in percent: metrics take the first part (they can take
# minutes when the cache is cold), the bootstrap statistics most of the rest.
METRICS_START, METRICS_END = 2, 40
PLOTS_AT, FILES_AT = 82, 94

CONTENT_TYPES = {"html": "text/html; charset=utf-8", "json": "application/json",
                 "csv": "text/csv; charset=utf-8", "png": "image/png", "svg": "image/svg+xml"}


def report_create(params: dict, *, title: str = "", created_by: str = "",
                  study=None) -> Report:
    """Validate the parameters (ValueError / UnknownSplit / UnknownMetric) and record a
    pending report of ``study`` (None: the default study; ``report_start`` also queues it)."""
    checked = ReportParams.from_dict(params).as_dict()
    title = title or f"Agreement report · {checked['split']} · seed {checked['seed']}"
    return Report.objects.create(title=title[:200], params=checked, created_by=created_by,
                                 created_at=timezone.now(), study_id=study_id(study))


def report_start(params: dict, *, title: str = "", created_by: str = "",
                 study=None) -> Report:
    """Record a pending report and queue its build after commit: a broker's worker builds it,
    or without one this process's job thread — never the request that asked (a report takes
    tens of seconds). Its status shows the progress; a failure records why. The same request
    while an identical report is queued or running returns that report; past the job caps it
    raises ``JobsBusy`` and records nothing (``annotation.core.jobs``)."""
    from ..tasks import enqueue_build_report

    checked = ReportParams.from_dict(params).as_dict()
    with transaction.atomic():
        # The same parameters in another study are another job (the default study's
        # fingerprint is the one from before studies).
        scope = checked if study is None else {**checked, "study": study_id(study)}
        existing = admit(REPORT, owner=created_by, fingerprint=report_fingerprint(scope))
        if existing is not None:
            return Report.objects.get(pk=existing.pk)
        report = report_create(checked, title=title, created_by=created_by, study=study)
        transaction.on_commit(lambda: enqueue_build_report(report.pk))
    return report


def report_restart(report: Report) -> bool:
    """Queue a failed report again (same row, same parameters: a build starts from scratch, so
    this is safe); False when it is not failed (already done, or running) or an identical
    report is queued or running. Past the job caps: ``JobsBusy``."""
    from ..tasks import enqueue_build_report

    with transaction.atomic():
        if admit(REPORT, owner=report.created_by, fingerprint=report_fingerprint(report.params),
                 replacing=report) is not None:
            return False
        restarted = Report.objects.filter(pk=report.pk, status=Report.Status.FAILED).update(
            status=Report.Status.PENDING, error="", stage="", progress=0, started_at=None,
            finished_at=None)
        if restarted:
            transaction.on_commit(lambda: enqueue_build_report(report.pk))
    return bool(restarted)


class ReportBusy(Exception):
    """The report is queued or building: deleting it now would pull it from under the job."""


def report_delete(report: Report) -> None:
    """Delete a finished (done or failed) report and every stored file of it. A queued or
    running one raises ``ReportBusy``: its build would recreate nothing, but fail midway."""
    with transaction.atomic():
        locked = Report.objects.select_for_update().filter(pk=report.pk).first()
        if locked is None:
            return  # already gone: deleting twice is harmless
        if locked.status not in (Report.Status.DONE, Report.Status.FAILED):
            raise ReportBusy("This report is still being built; delete it once it has "
                             "finished or failed.")
        ReportFile.objects.filter(report=locked).delete()
        locked.delete()


def report_progress(report_id: int, stage: str, percent: int) -> None:
    """Record what a running build is doing; its own short UPDATE (no transaction is open
    while a report computes), so the page's status poll sees it at once."""
    Report.objects.filter(pk=report_id, status=Report.Status.RUNNING).update(
        stage=stage[:80], progress=max(0, min(100, int(percent))))


def report_data_compute(params: ReportParams, progress: Progress | None = None
                        ) -> tuple[dict, dict]:
    """(report dict, plot inputs) for ``params``: the metrics' scores from the cache, scoring
    and caching what is missing (one metric at a time, so ``progress`` can say which), then
    every section computed from the database as it is."""
    from ..reports.meanwhile import Meanwhile
    from ..reports.params import read_pairwise_data

    progress = progress or (lambda stage, percent: None)
    n = len(params.metrics)

    def on_metric(i: int, name: str) -> None:
        progress(f"metrics {i + 1}/{n} ({name})",
                 METRICS_START + (METRICS_END - METRICS_START) * i // n)

    # The judgments are read while SciPy & co. are imported and the metric cache is read
    # (dropped if a metric must be scored: scoring is the memory peak of a cold report, and
    # the rows are read again after it).
    with Meanwhile(lambda: read_pairwise_data(params)) as judgments:
        from ..reports.assemble import build_report_data  # in the job, not at boot

        metric_summary, metric_scores = metric_scores_ensure(
            params.metrics, params.metric_options, on_metric, study=params.study,
            before_scoring=judgments.drop)
        pairwise = judgments.result()
    return build_report_data(params, metric_summary=metric_summary, metric_scores=metric_scores,
                             progress=progress, pairwise=pairwise)


def report_artifacts(data: dict, extra: dict, title: str,
                     progress: Progress | None = None) -> dict[str, bytes]:
    """Every file of a report: report.json, report.html, one CSV per table, PNG + SVG plots."""
    from ..reports.html import render_html  # matplotlib loads in the job, not at boot
    from ..reports.plots import render_all
    from ..reports.tables import all_tables, to_csv

    progress = progress or (lambda stage, percent: None)
    progress("plots", PLOTS_AT)
    plots = render_all(data, extra)
    progress("writing files", FILES_AT)
    files = {"report.json": json.dumps(data, indent=1, ensure_ascii=False).encode()}
    files["report.html"] = render_html(data, plots, title).encode()
    files.update({f"{name}.csv": to_csv(rows).encode() for name, rows in all_tables(data).items()})
    files.update(plots)
    return files


def report_build(report_id: int) -> Report:
    """Compute the report (metrics from the cache, computing what is missing) and store it."""
    with transaction.atomic():
        report = Report.objects.select_for_update().get(pk=report_id)
        if report.status == Report.Status.DONE:
            return report
        report.status, report.started_at = Report.Status.RUNNING, timezone.now()
        report.stage, report.progress = "starting", 0
        report.save(update_fields=["status", "started_at", "stage", "progress"])

    def progress(stage: str, percent: int) -> None:
        report_progress(report.pk, stage, percent)

    try:
        params = ReportParams.from_dict(report.params)
        params.study = report.study_id
        data, extra = report_data_compute(params, progress)
        files = report_artifacts(data, extra, report.title, progress)
    except Exception as exc:
        log.exception("report %s failed", report.uuid)
        report.mark_failed(exc)
        _announce(report, "failed")
        raise
    with transaction.atomic():
        ReportFile.objects.filter(report=report).delete()
        ReportFile.objects.bulk_create([
            ReportFile(report=report, name=name, content=content,
                       content_type=CONTENT_TYPES[name.rsplit(".", 1)[1]])
            for name, content in sorted(files.items())])
        report.data, report.snapshot = data, data["snapshot"]
        report.status, report.error, report.finished_at = Report.Status.DONE, "", timezone.now()
        report.stage, report.progress = "", 100
        report.save(update_fields=["data", "snapshot", "status", "error", "finished_at",
                                   "stage", "progress"])
        _announce(report, "done")
    return report


def _announce(report: Report, outcome: str) -> None:
    """Tell webhook subscribers a report is ready (or failed, with its error)."""
    report.refresh_from_db(fields=["error", "finished_at"])
    webhook_emit("report.ready", {
        "report": report.uuid, "title": report.title, "status": outcome,
        "error": report.error, "finished_at": report.finished_at}, study=report.study_id)


def report_generate(params: dict, *, title: str = "", created_by: str = "",
                    study=None) -> Report:
    """Create and build in this process (the command, the demo, the benchmark)."""
    report = report_create(params, title=title, created_by=created_by, study=study)
    return report_build(report.pk)


def report_write_dir(report: Report, out_dir: str | Path) -> list[Path]:
    """Write every stored file of the report to ``out_dir`` (created if needed)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for f in report.files.all():
        path = out / f.name
        path.write_bytes(bytes(f.content))
        written.append(path)
    return written
