"""Prolific's pages, mounted at ``ext/prolific/``: participants arrive at a batch, not a task,
and return through ``prolific_done``; Prolific posts status events to ``prolific_hook``."""
from django.urls import path

from annotation.providers.prolific import views

urlpatterns = [
    path("batch/<uuid:batch_uuid>/", views.prolific_batch, name="prolific_batch"),
    path("batch/<uuid:batch_uuid>/done/mturk/externalSubmit", views.prolific_done,
         name="prolific_done"),
    path("hooks/", views.prolific_hook, name="prolific_hook"),
]
