"""Start-up refuses to run without SECRET_KEY when DEBUG is off; bad env values fail loudly."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _check(env_overrides):
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DEBUG")}
    env.update(DJANGO_SETTINGS_MODULE="config.settings", **env_overrides)
    return subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_missing_secret_key_with_debug_off_fails():
    result = _check({})
    assert result.returncode != 0 and "SECRET_KEY is not set" in result.stderr


def test_bad_boolean_fails_loudly():
    result = _check({"SECRET_KEY": "x" * 50, "DEBUG": "maybe"})
    assert result.returncode != 0 and "DEBUG='maybe' is not a boolean" in result.stderr


def test_defaults_work_with_a_secret():
    result = _check({"SECRET_KEY": "x" * 50, "DATABASE_URL": "sqlite:////tmp/vlmeval-check.db"})
    assert result.returncode == 0, result.stderr


def test_bad_lockout_settings_fail_loudly():
    result = _check({"SECRET_KEY": "x" * 50, "LOGIN_FAILURE_LIMIT": "0"})
    assert result.returncode != 0 and "LOGIN_FAILURE_LIMIT=0 must be at least 1" in result.stderr
    result = _check({"SECRET_KEY": "x" * 50, "LOGIN_LOCKOUT_MINUTES": "soon"})
    assert result.returncode != 0 and "LOGIN_LOCKOUT_MINUTES='soon' is not a number" in result.stderr
