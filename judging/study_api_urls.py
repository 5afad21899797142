from django.urls import path
from rest_framework.routers import SimpleRouter

from . import study_api
from .judges import api as judges
from .submissions import api as submissions

router = SimpleRouter()
router.register("judge-runs", judges.JudgeRunViewSet, basename="study-judge-run")

urlpatterns = [
    path("", study_api.StudySourcesView.as_view(), name="study-api-root"),
    path("leaderboard/", study_api.StudyLeaderboardView.as_view(), name="study-leaderboard"),
    path("score-leaderboard/", study_api.StudyScoreLeaderboardView.as_view(),
         name="study-score-leaderboard"),
    path("submissions/", submissions.StudySubmissionListCreate.as_view(),
         name="study-submissions"),
    path("kit/", submissions.StudyKitDownload.as_view(), name="study-kit"),
    path("judge-powered/", study_api.StudyJudgePoweredView.as_view(), name="study-judge-powered"),
    *router.urls,
]
