"""Admin for the agreement app: cached scores, and the background jobs (metric runs, reports)
read-only, with their progress and, for a failed one, why (escaped by ``format_html``)."""
from django.contrib import admin
from django.utils.html import format_html

from .models import MetricRun, MetricScore, Report, ReportFile


def progress_bar(percent: int, stage: str = ""):
    """A <progress> bar with its percent (and what the job is doing)."""
    return format_html('<progress max="100" value="{}">{}%</progress> {}%{}', percent, percent,
                       percent, f" · {stage}" if stage else "")


@admin.display(description="error")
def error_excerpt(job) -> str:
    return job.error[:120] + ("…" if len(job.error) > 120 else "")


@admin.register(MetricScore)
class MetricScoreAdmin(admin.ModelAdmin):
    list_display = ["metric", "config_hash", "response", "score", "created_at"]
    list_filter = ["metric"]
    raw_id_fields = ["response"]


@admin.register(MetricRun)
class MetricRunAdmin(admin.ModelAdmin):
    list_display = ["uuid", "status", "progress", "done", "total", "cached", "error_excerpt",
                    "created_at"]
    list_filter = ["status"]
    readonly_fields = ["progress", *[f.name for f in MetricRun._meta.fields]]

    @admin.display(description="progress")
    def progress(self, run):
        return progress_bar(run.percent)

    error_excerpt = staticmethod(error_excerpt)

    def has_add_permission(self, request):
        return False  # runs are started by metric_run_start (API, command), never by hand


class ReportFileInline(admin.TabularInline):
    model = ReportFile
    fields = ["name", "content_type"]
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(Report)
class ReportAdmin(admin.ModelAdmin):
    list_display = ["title", "status", "progress_display", "error_excerpt", "created_by",
                    "created_at", "finished_at"]
    list_filter = ["status"]
    exclude = ["data", "stage", "progress"]
    readonly_fields = ["uuid", "params", "snapshot", "status", "progress_display", "error",
                       "created_by", "created_at", "started_at", "finished_at"]

    @admin.display(description="progress")
    def progress_display(self, report):
        return progress_bar(report.progress, report.stage)

    error_excerpt = staticmethod(error_excerpt)
    inlines = [ReportFileInline]

    def has_add_permission(self, request):
        return False  # reports are started by their service (page, API, command)
