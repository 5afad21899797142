from django.urls import path

from . import study_api

urlpatterns = [
    path("", study_api.StudySourcesView.as_view(), name="study-api-root"),
    path("leaderboard/", study_api.StudyLeaderboardView.as_view(), name="study-leaderboard"),
    path("score-leaderboard/", study_api.StudyScoreLeaderboardView.as_view(),
         name="study-score-leaderboard"),
    path("judge-powered/", study_api.StudyJudgePoweredView.as_view(), name="study-judge-powered"),
]
