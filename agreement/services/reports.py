"""Reports: create (pending), start (create and queue the build: the pages and the API), build
(the Celery task's body), generate (create and build here, for the command and the demo), and
write the artefacts to a directory. ``report_data_compute`` is the one path from parameters to
the report's data: it first scores what the metric cache lacks (``metric_scores_ensure``, the
report's only write), then gathers and computes (``reports.assemble``, reads only).

A report is rebuilt from scratch by ``report_build`` and its files replaced in one transaction,
so a task delivered twice yields the same report, never a half-written one.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from ..models import Report, ReportFile
from ..reports.params import ReportParams
from .metric_scores import metric_scores_ensure

log = logging.getLogger(__name__)

CONTENT_TYPES = {"html": "text/html; charset=utf-8", "json": "application/json",
                 "csv": "text/csv; charset=utf-8", "png": "image/png", "svg": "image/svg+xml"}


def report_create(params: dict, *, title: str = "", created_by: str = "") -> Report:
    """Validate the parameters (ValueError / UnknownSplit / UnknownMetric) and record a
    pending report (``report_start`` also queues it)."""
    checked = ReportParams.from_dict(params).as_dict()
    title = title or f"Agreement report · {checked['split']} · seed {checked['seed']}"
    return Report.objects.create(title=title[:200], params=checked, created_by=created_by,
                                 created_at=timezone.now())


def report_start(params: dict, *, title: str = "", created_by: str = "") -> Report:
    """Record a pending report and queue its build after commit: a broker's worker builds it,
    or without one a thread of this process — never the request that asked (a report takes
    tens of seconds). Its status shows the progress; a failure records why."""
    from ..tasks import enqueue_build_report

    with transaction.atomic():
        report = report_create(params, title=title, created_by=created_by)
        transaction.on_commit(lambda: enqueue_build_report(report.pk))
    return report


def report_data_compute(params: ReportParams) -> tuple[dict, dict]:
    """(report dict, plot inputs) for ``params``: the metrics' scores from the cache, scoring
    and caching what is missing, then every section computed from the database as it is."""
    from ..reports.assemble import build_report_data  # SciPy & co. load in the job, not at boot

    metric_summary: dict[str, dict] = {}
    metric_scores: dict[str, dict[int, float]] = {}
    if params.metrics:
        metric_summary, metric_scores = metric_scores_ensure(params.metrics,
                                                             params.metric_options)
    return build_report_data(params, metric_summary=metric_summary, metric_scores=metric_scores)


def report_artifacts(data: dict, extra: dict, title: str) -> dict[str, bytes]:
    """Every file of a report: report.json, report.html, one CSV per table, PNG + SVG plots."""
    from ..reports.html import render_html  # matplotlib loads in the job, not at boot
    from ..reports.plots import render_all
    from ..reports.tables import all_tables, to_csv

    plots = render_all(data, extra)
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
        report.save(update_fields=["status", "started_at"])
    try:
        data, extra = report_data_compute(ReportParams.from_dict(report.params))
        files = report_artifacts(data, extra, report.title)
    except Exception as exc:
        log.exception("report %s failed", report.uuid)
        report.mark_failed(exc)
        raise
    with transaction.atomic():
        ReportFile.objects.filter(report=report).delete()
        ReportFile.objects.bulk_create([
            ReportFile(report=report, name=name, content=content,
                       content_type=CONTENT_TYPES[name.rsplit(".", 1)[1]])
            for name, content in sorted(files.items())])
        report.data, report.snapshot = data, data["snapshot"]
        report.status, report.error, report.finished_at = Report.Status.DONE, "", timezone.now()
        report.save(update_fields=["data", "snapshot", "status", "error", "finished_at"])
    return report


def report_generate(params: dict, *, title: str = "", created_by: str = "") -> Report:
    """Create and build in this process (the command, the demo, the benchmark)."""
    report = report_create(params, title=title, created_by=created_by)
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
