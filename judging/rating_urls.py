"""Leaderboards (analysts): the page, its plots and downloads."""
from django.urls import path

from .views import leaderboard as views

urlpatterns = [
    path("leaderboard/", views.leaderboard_page, name="leaderboard"),
    path("leaderboard/ratings.png", views.ratings_plot, name="leaderboard_ratings_png"),
    path("leaderboard/categories.png", views.category_plot, name="leaderboard_categories_png"),
    path("leaderboard.<str:fmt>", views.leaderboard_download, name="leaderboard_download"),
    path("leaderboard/scores.<str:fmt>", views.score_leaderboard_download,
         name="leaderboard_scores_download"),
]
