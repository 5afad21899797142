"""A study's batches in the API, mounted at /api/studies/<slug>/ (``studies.api``)."""
from django.urls import path
from rest_framework.routers import SimpleRouter

from annotation.engine import api

router = SimpleRouter()
router.register("batches", api.BatchViewSet, basename="study-batch")

urlpatterns = [
    path("batches/<uuid:uuid>/results.<str:fmt>", api.StudyBatchResultsView.as_view(),
         name="study-batch-results"),
    *router.urls,
]
