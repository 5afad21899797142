"""API routes for judge runs, mounted at /api/judges/."""
from rest_framework.routers import DefaultRouter

from . import api

router = DefaultRouter()
router.include_format_suffixes = False  # `.json` suffixes add URLs our actions do not take
router.register("runs", api.JudgeRunViewSet, basename="judge-run")

urlpatterns = router.urls
