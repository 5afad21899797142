"""Analyst report pages (every view is analyst_required)."""
from django.urls import path

from . import views

app_name = "agreement"
urlpatterns = [
    path("", views.report_list, name="report_list"),
    path("new/", views.report_start, name="report_start"),
    path("<uuid:report_uuid>/", views.report_detail, name="report_detail"),
    path("<uuid:report_uuid>/status/", views.report_status, name="report_status"),
    path("<uuid:report_uuid>/restart/", views.report_restart, name="report_restart"),
    path("<uuid:report_uuid>/delete/", views.report_delete, name="report_delete"),
    path("<uuid:report_uuid>/files/<str:name>", views.report_file, name="report_file"),
]
