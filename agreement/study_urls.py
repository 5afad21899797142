"""Pages of one study, under /s/ (namespace studies): its home and its public board."""
from django.urls import path

from judging.views.study_board import study_board
from judging.views.vote_plan import vote_plan_batch, vote_plan_page

from . import homes

app_name = "studies"

urlpatterns = [
    path("", homes.study_list, name="list"),
    path("<slug:study_slug>/", homes.study_home, name="home"),
    path("<slug:study_slug>/board/", study_board, name="board"),
    path("<slug:study_slug>/plan/", vote_plan_page, name="plan"),
    path("<slug:study_slug>/plan/batch/", vote_plan_batch, name="plan_batch"),
]
