"""MTurk's arrival page, mounted at ``ext/mturk/`` (the names join the ``annotation`` namespace)."""
from django.urls import path

from annotation.providers.mturk import views

urlpatterns = [
    path("task/<uuid:task_uuid>/", views.mturk_task, name="mturk_task"),
]
