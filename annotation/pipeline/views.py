"""Admin pages of the construction pipeline: stage counts with a bulk push, and the
verification report (VisIT-Bench Table 2) as a page, JSON and CSV."""
from django.contrib import messages
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_POST

from annotation.core.http import request_text
from annotation.core.permissions import admin_required
from annotation.models import Instance
from annotation.pipeline.report import COLUMNS, ROWS, table2_csv
from annotation.pipeline.selectors import stage_counts, verification_report
from annotation.pipeline.services import PipelineError, pipeline_push


@admin_required
@require_GET
def dashboard(request):
    return render(request, "annotation/pipeline/dashboard.html", {"stages": stage_counts()})


@admin_required
@require_POST
def push(request):
    stage = request.POST.get("stage", "")
    try:
        queued = pipeline_push(stage)
    except PipelineError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{stage}: queued {queued}.")
    return redirect("pipeline:dashboard")


def _source(request) -> str | None:
    """``?source=visitbench``: Table 2 of one source (longer than the column, or a NUL: 400)."""
    return request_text(request.GET, "source",
                        max_length=Instance._meta.get_field("source").max_length) or None


@admin_required
@require_GET
def report(request):
    source = _source(request)
    table = verification_report(source)
    rows = [(label, [table[c][key] for c in COLUMNS]) for key, label in ROWS]
    return render(request, "annotation/pipeline/report.html", {
        "columns": COLUMNS, "rows": rows, "counts": [table[c]["n"] for c in COLUMNS],
        "source": source,
    })


@admin_required
@require_GET
def report_json(request):
    return JsonResponse(verification_report(_source(request)))


@admin_required
@require_GET
def report_csv(request):
    response = HttpResponse(table2_csv(verification_report(_source(request))),
                            content_type="text/csv")
    response["Content-Disposition"] = content_disposition_header(True,
                                                                 "verification_report.csv")
    return response
