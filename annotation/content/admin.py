"""Admin for the benchmark content. Instances get an "Import a benchmark file" button (the same
importers the management commands call); a bad file shows the row it failed on and nothing is
written."""
from django import forms
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render
from django.urls import path

from annotation.content.imports.common import ImportFailed
from annotation.content.imports.convbench import import_convbench
from annotation.content.imports.prometheus import import_prometheus
from annotation.content.imports.visitbench import import_visitbench
from annotation.models import (
    ConversationTurn,
    Image,
    Instance,
    InstanceImage,
    InstructionFamily,
    ScoreRubric,
)

IMPORTERS = {
    "visitbench": ("VisIT-Bench CSV (single- or multi-image)", import_visitbench),
    "convbench": ("ConvBench workbook (.xlsx; images can be matched later by image_id)",
                  import_convbench),
    "prometheus": ("Prometheus-Vision rubric prompts (.jsonl)", import_prometheus),
}


class ImportForm(forms.Form):
    format = forms.ChoiceField(choices=[(k, label) for k, (label, _) in IMPORTERS.items()])
    file = forms.FileField()


class InstanceImageInline(admin.TabularInline):
    model = InstanceImage
    extra = 0
    raw_id_fields = ("image",)


class TurnInline(admin.StackedInline):
    model = ConversationTurn
    extra = 0


@admin.register(Instance)
class InstanceAdmin(admin.ModelAdmin):
    list_display = ("__str__", "kind", "family", "stage", "reference_status", "source")
    list_filter = ("kind", "stage", "reference_status", "source", "family")
    search_fields = ("instruction", "external_id")
    inlines = (InstanceImageInline, TurnInline)
    change_list_template = "admin/annotation/instance/change_list.html"

    def get_urls(self):
        return [path("import/", self.admin_site.admin_view(self.import_view),
                     name="annotation_instance_import"), *super().get_urls()]

    def import_view(self, request):
        if not self.has_add_permission(request):
            raise PermissionDenied  # staff without the model permission: 403
        form = ImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            _, importer = IMPORTERS[form.cleaned_data["format"]]
            try:
                summary = importer(form.cleaned_data["file"].read())
            except ImportFailed as exc:
                form.add_error("file", "; ".join(exc.messages) + " — nothing was imported.")
            else:
                self.message_user(request, f"Imported {form.cleaned_data['file'].name}: {summary}")
                return redirect("admin:annotation_instance_changelist")
        context = {**self.admin_site.each_context(request), "form": form,
                   "title": "Import a benchmark file", "opts": self.model._meta}
        return render(request, "admin/annotation/instance/import.html", context)


admin.site.register(Image, list_display=("__str__", "fetch_status", "width", "height", "license"),
                    search_fields=("source_url", "external_id"))
admin.site.register(InstructionFamily, list_display=("name", "skill", "origin", "multi_image"))
admin.site.register(ScoreRubric, list_display=("criteria", "instance"))
