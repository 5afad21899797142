#!/usr/bin/env bash
# make demo: migrate, load the demo study, serve it on http://127.0.0.1:8000.
# Runs with DEBUG off like production, but over plain http on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p var
[ -s var/demo-secret ] || .venv/bin/python -c "import secrets; print(secrets.token_urlsafe(50))" > var/demo-secret
export SECRET_KEY="$(cat var/demo-secret)" DEBUG=0 SESSION_COOKIE_SECURE=0 CSRF_COOKIE_SECURE=0
export DATABASE_URL="${DATABASE_URL:-sqlite:///$PWD/var/demo.sqlite3}"
export NLTK_DATA="${NLTK_DATA:-$PWD/var/nltk_data}"
.venv/bin/python manage.py migrate --noinput -v0
.venv/bin/python manage.py collectstatic --noinput -v0
.venv/bin/python manage.py load_demo
cat <<MSG

  VLM Eval demo on http://127.0.0.1:8000/
    annotator pages   http://127.0.0.1:8000/            (anna / ben)
    admin             http://127.0.0.1:8000/admin/      (admin)
    API schema        http://127.0.0.1:8000/api/schema/ (any login)
  Password for every demo login: demo-password        Stop with Ctrl-C.

MSG
exec .venv/bin/python manage.py runserver 127.0.0.1:8000 --noreload
