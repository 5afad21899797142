"""The judge layer tells the submissions built on it that a run ended through a hook list
(``judging.judges.hooks``) they subscribe to at app-ready, never by importing them: a finished
run still finishes its submission, a cancelled one still fails it."""
import ast
from pathlib import Path

import pytest

import judging.judges
from judging.judges import hooks
from judging.judges.models import JudgeRun
from judging.judges.services import judge_run_cancel, judge_run_execute
from judging.submissions import services as submissions
from judging.submissions.models import Submission
from tests.judging.submissions.test_submissions import _jsonl, _submitter, bench  # noqa: F401

pytestmark = pytest.mark.django_db


def _imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            names.add("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_the_judge_layer_imports_nothing_from_submissions():
    package = Path(judging.judges.__file__).parent
    offenders = {str(path.relative_to(package)): sorted(m for m in _imported_modules(path)
                                                        if "submissions" in m)
                 for path in package.rglob("*.py")}
    assert {path: mods for path, mods in offenders.items() if mods} == {}


def _submit(instances):
    return submissions.submission_create(submitter=_submitter(), name="NewVLM",
                                         file_name="p.jsonl", data=_jsonl(instances[:3]))


@pytest.fixture
def spy(monkeypatch):
    """Every run-ended notice, beside the subscribers app-ready registered."""
    heard = []
    monkeypatch.setattr(hooks, "_RUN_ENDED", [*hooks._RUN_ENDED, lambda run, **kw: heard.append(
        (run.pk, kw))])
    return heard


@pytest.fixture
def undispatched(monkeypatch):
    """Submissions' runs are worked here, not queued."""
    start = submissions.judge_run_start
    monkeypatch.setattr(submissions, "judge_run_start",
                        lambda **kw: start(**{**kw, "dispatch": False}))


def test_a_finished_run_finishes_its_submission(bench, spy, undispatched):  # noqa: F811
    sub = _submit(bench["instances"])
    assert sub.status == Submission.Status.JUDGING
    run = judge_run_execute(JudgeRun.objects.get(pk=sub.run_id))
    assert run.status == JudgeRun.Status.DONE
    sub.refresh_from_db()
    assert sub.status == Submission.Status.DONE and sub.finished_at is not None
    assert spy == [(run.pk, {"finished": True, "why": ""})]  # told once


def test_a_cancelled_run_fails_its_submission_with_the_reason(bench, spy,  # noqa: F811
                                                              undispatched):
    sub = _submit(bench["instances"])
    judge_run_cancel(JudgeRun.objects.get(pk=sub.run_id))
    sub.refresh_from_db()
    assert sub.status == Submission.Status.FAILED
    assert sub.error == "Judging stopped: the judge run was cancelled."
    assert spy == [(sub.run_id, {"finished": False, "why": "the judge run was cancelled"})]
