from rest_framework.routers import DefaultRouter

from . import api

router = DefaultRouter()
router.include_format_suffixes = False  # `.json` suffixes add URLs our actions do not take
router.register("reports", api.ReportViewSet, basename="agreement-report")
router.register("metric-runs", api.MetricRunViewSet, basename="agreement-metric-run")

urlpatterns = router.urls
