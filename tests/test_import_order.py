"""The REST plumbing imports cleanly whichever module loads first: DRF's views read the API
settings, which name ``annotation.core.rest``'s classes, so that module must not import DRF's
views at its top (a management command in a fresh process failed its checks so)."""
import os
import subprocess
import sys
from pathlib import Path


def test_the_rest_module_imports_first_in_a_fresh_process():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings_test"}
    probe = ("import django; django.setup(); import annotation.core.rest; "
             "from rest_framework import views; print('imported')")
    out = subprocess.run([sys.executable, "-c", probe], cwd=Path(__file__).resolve().parents[1],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "imported", out.stderr[-2000:]
