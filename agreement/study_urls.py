"""Pages of one study, under /s/ (namespace studies): its home and its public board."""
from django.urls import path

from judging.views.study_board import study_board

from . import homes

app_name = "studies"

urlpatterns = [
    path("", homes.study_list, name="list"),
    path("<slug:study_slug>/", homes.study_home, name="home"),
    path("<slug:study_slug>/board/", study_board, name="board"),
]
