from django.urls import path

from . import views

urlpatterns = [
    path("task/<uuid:task_uuid>/", views.toy_task, name="toy_task"),
    path("submitted/mturk/externalSubmit", views.toy_submitted, name="toy_submitted"),
]
