"""Our own deployment checks, run by `manage.py check --deploy` (and so by `make check-prod`)
next to Django's: the settings a real study needs that Django cannot know about."""
from urllib.parse import urlparse

from django.conf import settings
from django.core.checks import Error, Tags, Warning, register


@register(Tags.security, deploy=True)
def production_settings(app_configs, **kwargs):
    problems = []
    if settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"):
        problems.append(Warning(
            "DATABASE_URL points at SQLite; concurrent claims are serialized. Use PostgreSQL.",
            id="vlmeval.W001"))
    if not settings.CELERY_BROKER_URL:
        problems.append(Error(
            "CELERY_BROKER_URL is unset: LLM calls and syncs would run inside web requests.",
            id="vlmeval.E001"))
    if urlparse(settings.PUBLIC_BASE_URL).scheme != "https":
        problems.append(Error(
            "PUBLIC_BASE_URL must be https (marketplaces frame our task pages over HTTPS).",
            id="vlmeval.E002"))
    if "*" in settings.ALLOWED_HOSTS:
        problems.append(Error("ALLOWED_HOSTS must not contain '*'.", id="vlmeval.E003"))
    if settings.MTURK_PRODUCTION and not settings.CELERY_BROKER_URL:
        problems.append(Error("MTURK_PRODUCTION needs a Celery broker for syncs.",
                              id="vlmeval.E004"))
    return problems
