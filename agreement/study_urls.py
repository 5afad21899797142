"""Pages of one study, under /s/ (namespace studies): its home and its public board."""
from django.urls import path

from judging.submissions import views as submissions
from judging.views.study_board import study_board

from . import homes

app_name = "studies"

urlpatterns = [
    path("", homes.study_list, name="list"),
    path("<slug:study_slug>/", homes.study_home, name="home"),
    path("<slug:study_slug>/board/", study_board, name="board"),
    path("<slug:study_slug>/submit/", submissions.study_submit, name="submit"),
    path("<slug:study_slug>/submit/kit.zip", submissions.study_kit_download, name="submit_kit"),
    path("<slug:study_slug>/submit/board/", submissions.study_my_board, name="submit_board"),
    path("<slug:study_slug>/submit/<uuid:submission_uuid>/", submissions.study_submission_status,
         name="submission"),
    path("<slug:study_slug>/submit/<uuid:submission_uuid>/status.json",
         submissions.study_submission_status_json, name="submission_status"),
]
