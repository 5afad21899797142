"""Admin-only pages of the construction pipeline (mounted at /pipeline/)."""
from django.urls import path

from annotation.pipeline import views as pipeline

app_name = "pipeline"

urlpatterns = [
    path("", pipeline.dashboard, name="dashboard"),
    path("push/", pipeline.push, name="push"),
    path("report/", pipeline.report, name="report"),
    path("report.json", pipeline.report_json, name="report_json"),
    path("report.csv", pipeline.report_csv, name="report_csv"),
]
