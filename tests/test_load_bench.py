"""The HTTP load benchmark in its short mode: gunicorn + PostgreSQL, 10 simulated annotators,
and the invariants it checks afterwards (0 over-assignment, 0 duplicates, 0 lost submissions)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def test_short_load_run_keeps_every_invariant():
    if not os.environ.get("TEST_DATABASE_URL", "").startswith("postgres"):
        pytest.skip("needs TEST_DATABASE_URL on PostgreSQL (make test starts one)")
    env = {k: v for k, v in os.environ.items()
           if k not in ("DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE", "DATABASE_URL")}
    result = subprocess.run([sys.executable, "bench/load.py", "--quick"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    row = next(line.split() for line in result.stdout.splitlines() if line.strip().startswith("10 "))
    assert row[2] == "200"  # 40 tasks × 5 submissions, all acknowledged
    assert row[-4:] == ["0", "0", "0", "0"]  # over-assignment, duplicates, lost, errors
    assert "invariants: ok" in result.stdout
