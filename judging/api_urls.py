from django.urls import path
from rest_framework.routers import DefaultRouter

from . import api
from .submissions import api as submissions_api

router = DefaultRouter()
router.include_format_suffixes = False  # `.json` suffixes add URLs our actions do not take
router.register("models", api.EvalModelViewSet, basename="eval-model")

urlpatterns = [
    path("leaderboard/", api.LeaderboardView.as_view(), name="eval-leaderboard"),
    path("score-leaderboard/", api.ScoreLeaderboardView.as_view(),
         name="eval-score-leaderboard"),
    path("judges/", api.JudgesView.as_view(), name="eval-judges"),
    path("majorities/", api.MajoritiesView.as_view(), name="eval-majorities"),
    path("kit/", submissions_api.KitDownload.as_view(), name="eval-kit"),
    path("submissions/", submissions_api.SubmissionListCreate.as_view(),
         name="eval-submissions"),
    path("submissions/<uuid:submission_uuid>/", submissions_api.SubmissionDetail.as_view(),
         name="eval-submission"),
    *router.urls,
]
