"""Celery app; eager (in-process) when no broker is configured, so a laptop needs no Redis."""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("vlmeval")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
