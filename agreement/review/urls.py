"""Disagreement review pages (every view is analyst_required)."""
from django.urls import path

from . import views

app_name = "review"
urlpatterns = [
    path("", views.review_list, name="list"),
    path("<uuid:comparison_uuid>/", views.review_item, name="item"),
    path("<uuid:comparison_uuid>/adjudicate/", views.review_adjudicate, name="adjudicate"),
    path("<uuid:comparison_uuid>/more-votes/", views.review_more_votes, name="more_votes"),
]
