"""`make check-prod`: Django's deploy checks plus ours pass with the documented production env,
and our checks catch what a real study must not run with."""
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_documented_production_env_passes_deploy_checks():
    result = subprocess.run(["bash", "scripts/check_prod.sh"], cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout + result.stderr


def test_our_checks_refuse_http_base_url_and_missing_broker(settings):
    from annotation.core.checks import production_settings

    settings.PUBLIC_BASE_URL = "http://eval.example.org"
    settings.CELERY_BROKER_URL = ""
    ids = {problem.id for problem in production_settings(None)}
    assert {"vlmeval.E001", "vlmeval.E002"} <= ids
    settings.PUBLIC_BASE_URL = "https://eval.example.org"
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/0"
    assert not {p.id for p in production_settings(None)} & {"vlmeval.E001", "vlmeval.E002"}
