"""Test settings: the real settings with test-only secrets and a fast password hasher.

``TEST_DATABASE_URL`` (set by ``make test``) runs the suite on PostgreSQL; without it SQLite.
"""
import os
import tempfile

os.environ.setdefault("SECRET_KEY", "test-only-not-secret")
os.environ.setdefault(
    "DATABASE_URL", os.environ.get("TEST_DATABASE_URL") or "sqlite:///" + os.path.join(
        tempfile.gettempdir(), "vlmeval-test.sqlite3")
)
os.environ.pop("CELERY_BROKER_URL", None)

from .settings import *  # noqa: E402,F403
from .settings import STORAGES  # noqa: E402

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {**STORAGES, "staticfiles": {
    "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}
MEDIA_ROOT = tempfile.mkdtemp(prefix="vlmeval-media-")
STATIC_ROOT = tempfile.mkdtemp(prefix="vlmeval-static-")
SESSION_COOKIE_SECURE = False
CSRF_COOKIE_SECURE = False
