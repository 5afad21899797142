from django.urls import path
from rest_framework.routers import DefaultRouter

from annotation.engine import api

router = DefaultRouter()
router.include_format_suffixes = False  # `.json` suffixes add URLs our actions do not take
router.register("batches", api.BatchViewSet, basename="batch")
router.register("tasks", api.TaskViewSet, basename="task")
router.register("workers", api.WorkerViewSet, basename="worker")
router.register("assignments", api.AssignmentViewSet, basename="assignment")
router.register("my/assignments", api.MyAssignmentViewSet, basename="my-assignment")

urlpatterns = [
    path("batches/<uuid:uuid>/results.<str:fmt>", api.BatchResultsView.as_view(),
         name="batch-results"),
    *router.urls,
]
