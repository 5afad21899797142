"""Judge run pages and judge leaderboards, under /eval/judges/ (namespace judging:judges)."""
from django.urls import path

from . import views

app_name = "judges"

urlpatterns = [
    path("", views.run_list, name="run_list"),
    path("new/", views.run_new, name="run_new"),
    path("leaderboards/", views.leaderboards, name="leaderboards"),
    path("runs/<uuid:run_uuid>/", views.run_detail, name="run_detail"),
    path("runs/<uuid:run_uuid>/cancel/", views.run_cancel, name="run_cancel"),
    path("runs/<uuid:run_uuid>/resume/", views.run_resume, name="run_resume"),
]
