"""WSGI entry point (gunicorn config.wsgi)."""
import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()


def _freeze_startup_objects() -> None:
    """Import every view now, then move the ~180k objects of the loaded application into the
    collector's permanent generation. A full collection otherwise walks all of them (~80 ms
    here), and under load those pauses were the 100–500 ms latency tail of the task pages."""
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 - imports every URLconf and view module
    gc.freeze()


_freeze_startup_objects()
