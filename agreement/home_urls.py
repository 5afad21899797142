"""The analyst's and the admin's homes, under /study/ (namespace homes); "/" redirects here."""
from django.urls import path

from . import homes

app_name = "homes"

urlpatterns = [
    path("", homes.analyst_home, name="analyst"),
    path("dashboard/", homes.admin_home, name="dashboard"),
]
