#!/usr/bin/env bash
# make check-prod: Django's `check --deploy` plus our own checks (annotation/core/checks.py) with the
# documented production environment (.env.example's values, a generated secret).
set -euo pipefail
cd "$(dirname "$0")/.."
set -a
# shellcheck disable=SC1091
. <(grep -E '^[A-Z_]+=' .env.example)
set +a
export DJANGO_SETTINGS_MODULE=config.settings
unset DJANGO_ALLOW_ASYNC_UNSAFE TEST_DATABASE_URL
export SECRET_KEY="$(.venv/bin/python -c 'import secrets; print(secrets.token_urlsafe(50))')"
exec .venv/bin/python manage.py check --deploy --fail-level WARNING
