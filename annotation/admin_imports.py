"""Admin upload for the benchmark importers: the same services the management commands call.

Instances get an "Import a benchmark file" button; a bad file shows the row it failed on and
nothing is written.
"""
from django import forms
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render
from django.urls import path

from .admin import InstanceAdmin
from .imports.common import ImportFailed
from .imports.convbench import import_convbench
from .imports.prometheus import import_prometheus
from .imports.visitbench import import_visitbench
from .models import Instance

IMPORTERS = {
    "visitbench": ("VisIT-Bench CSV (single- or multi-image)", import_visitbench),
    "convbench": ("ConvBench workbook (.xlsx; images can be matched later by image_id)",
                  import_convbench),
    "prometheus": ("Prometheus-Vision rubric prompts (.jsonl)", import_prometheus),
}


class ImportForm(forms.Form):
    format = forms.ChoiceField(choices=[(k, label) for k, (label, _) in IMPORTERS.items()])
    file = forms.FileField()


class InstanceImportAdmin(InstanceAdmin):
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


admin.site.unregister(Instance)
admin.site.register(Instance, InstanceImportAdmin)
