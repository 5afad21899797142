"""A study's reports and metric runs in the API, mounted at /api/studies/<slug>/."""
from rest_framework.routers import SimpleRouter

from . import api

router = SimpleRouter()
router.register("reports", api.ReportViewSet, basename="study-report")
router.register("metric-runs", api.MetricRunViewSet, basename="study-metric-run")

urlpatterns = router.urls
