from django.contrib import admin

from .models import MetricRun, MetricScore, Report, ReportFile


@admin.register(MetricScore)
class MetricScoreAdmin(admin.ModelAdmin):
    list_display = ["metric", "config_hash", "response", "score", "created_at"]
    list_filter = ["metric"]
    raw_id_fields = ["response"]


@admin.register(MetricRun)
class MetricRunAdmin(admin.ModelAdmin):
    list_display = ["uuid", "status", "done", "total", "cached", "created_at"]
    list_filter = ["status"]
    readonly_fields = [f.name for f in MetricRun._meta.fields]

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
    list_display = ["title", "status", "created_by", "created_at", "finished_at"]
    list_filter = ["status"]
    exclude = ["data"]
    readonly_fields = ["uuid", "params", "snapshot", "status", "error", "created_by",
                       "created_at", "started_at", "finished_at"]
    inlines = [ReportFileInline]

    def has_add_permission(self, request):
        return False  # reports are started by their service (page, API, command)
