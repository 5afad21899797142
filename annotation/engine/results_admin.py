"""Results in the admin: ``BatchResultsAdminMixin`` gives ``BatchAdmin`` export actions and
download links on a batch's page; ``AssignmentPersonAdminMixin`` shows an assignment's worker
as the person (``anna``, a marketplace id), not the row's ``local:user-3``. Both call
``annotation.engine.results``; ``annotation.engine.admin`` mixes them in."""
from django.contrib import admin
from django.http import Http404, HttpResponseBadRequest
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from annotation.engine.results import FORMATS, UnknownFormat, check_format, results_response
from annotation.engine.selectors_workers import worker_person as _person


class BatchResultsAdminMixin:
    """Actions "Export results as CSV/JSONL/Parquet" (the selected batches in one file) and
    ``results_download`` (read-only field: one link per format) on the change page."""

    def get_urls(self):
        return [path("<path:object_id>/results/<str:format>/",
                     self.admin_site.admin_view(self.results_view),
                     name="annotation_batch_results"), *super().get_urls()]

    def results_view(self, request, object_id, format):
        batch = self.get_object(request, object_id)
        if batch is None or not self.has_view_permission(request, batch):
            raise Http404("No such batch.")
        try:
            check_format(format)
        except UnknownFormat as exc:
            return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
        return results_response([batch], format)

    @admin.display(description="Results (one row per assignment)")
    def results_download(self, obj):
        if obj is None or obj.pk is None:
            return "—"
        return format_html_join(" · ", '<a href="{}">{}</a>', (
            (reverse("admin:annotation_batch_results", args=[obj.pk, fmt]), fmt.upper())
            for fmt in FORMATS))

    def _export(self, queryset, fmt):
        return results_response(list(queryset.order_by("pk")), fmt)

    @admin.action(description="Export results as CSV")
    def export_results_csv(self, request, queryset):
        return self._export(queryset, "csv")

    @admin.action(description="Export results as JSONL")
    def export_results_jsonl(self, request, queryset):
        return self._export(queryset, "jsonl")

    @admin.action(description="Export results as Parquet")
    def export_results_parquet(self, request, queryset):
        return self._export(queryset, "parquet")


class AssignmentPersonAdminMixin:
    """``person``: the worker as people know them, for ``list_display`` (needs
    ``worker__user`` in ``list_select_related``)."""

    @admin.display(description="Worker", ordering="worker__external_id")
    def person(self, obj):
        return format_html('<a href="{}">{}</a> <small>({})</small>',
                           reverse("admin:annotation_worker_overview", args=[obj.worker_id]),
                           _person(obj.worker), obj.worker.get_provider_display())
