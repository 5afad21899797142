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
# A clearly labelled stand-in judge server (deterministic verdicts from a hash of the prompt;
# no information about quality) so the demo's automatic judges run without any API key.
# Point DEMO_JUDGE_BASE_URL at a real OpenAI-compatible endpoint to use a real judge instead.
if [ -z "${DEMO_JUDGE_BASE_URL:-}" ]; then
  .venv/bin/python tests/support/fake_openai.py --port 8765 --latency-ms 0 > var/stand-in-judge.log 2>&1 &
  STAND_IN_PID=$!
  trap 'kill $STAND_IN_PID 2>/dev/null || true' EXIT
fi
# Submissions open against the stand-in reference-backed judge (judging/judges/demo.py), so the
# demo's submitter (sam) walks kit -> submission -> judged -> board.
export SUBMISSION_JUDGE="${SUBMISSION_JUDGE:-Stand-in reference-backed judge}"
.venv/bin/python manage.py migrate --noinput -v0
.venv/bin/python manage.py collectstatic --noinput -v0
.venv/bin/python manage.py load_demo
cat <<MSG

  VLM Eval demo on http://127.0.0.1:8000/
    annotator pages   http://127.0.0.1:8000/            (anna / ben)
    admin             http://127.0.0.1:8000/admin/      (admin)
    leaderboards      http://127.0.0.1:8000/eval/leaderboard/        (analyst; pairwise and scores)
    submit a model    http://127.0.0.1:8000/eval/submit/             (sam: benchmark kit, upload, own rank)
    judge runs        http://127.0.0.1:8000/eval/judges/             (analyst)
    agreement reports http://127.0.0.1:8000/reports/                 (analyst)
    pipeline          http://127.0.0.1:8000/pipeline/                (admin)
    API schema        http://127.0.0.1:8000/api/schema/ (any login)
  Password for every demo login: demo-password        Stop with Ctrl-C.

  What is in it: generated pictures (shapes, bar charts, a house scene) whose facts the texts
  follow; answers by invented models (names end in "(demo)"), some deliberately wrong; a
  simulated crowd's votes in forced-choice (with gold checks), multi-turn, rubric and
  which-feedback batches; the three construction steps waiting for work; stand-in judges.

MSG
.venv/bin/python manage.py runserver 127.0.0.1:8000 --noreload
