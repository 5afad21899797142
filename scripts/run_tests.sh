#!/usr/bin/env bash
# The whole suite on a real PostgreSQL (concurrency tests need it) with real Chromium, then the
# engine's tests again on the embedded SQLite default, so both databases stay supported.
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(scripts/services.sh start)"
export NLTK_DATA="${NLTK_DATA:-$PWD/var/nltk_data}"
.venv/bin/ruff check . 
echo "== engine tests on SQLite (the embedded default)"
TEST_DATABASE_URL= .venv/bin/python -m pytest -q -p no:cacheprovider tests/annotation -m "not postgres"
echo "== whole suite on PostgreSQL + Chromium"
.venv/bin/python -m pytest -q -p no:cacheprovider
