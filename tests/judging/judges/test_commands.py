"""Management commands: estimate, run (start + resume), ablation export/import/table."""
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from judging.judges.models import JudgeRun
from judging.models import Judgment, Response
from tests.judging.judges.conftest import (
    make_comparison,
    make_conversation_instance,
    make_judge,
    make_models,
)

pytestmark = pytest.mark.django_db


def _call(*args):
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_estimate_then_run_then_rerun_is_free(server):
    m1, m2 = make_models("m1", "m2")
    comparisons = [make_comparison(m1, m2) for _ in range(2)]
    server.responder = lambda body: "Overall, Response B is better."
    judge = make_judge(server, name="cmd-judge")
    assert "4 new calls (0 already paid)" in _call("judge_estimate", "--judge", "cmd-judge")
    out = _call("judge_run", "--judge", "cmd-judge", "--concurrency", "1", "--quiet")
    assert "done · 4/4 units" in out and "4 calls made" in out
    out = _call("judge_run", "--judge", "cmd-judge", "--concurrency", "1", "--quiet",
                "--items", str(comparisons[0].uuid))
    assert "0 calls made, 2 cached" in out and server.call_count == 4
    assert "0 new calls (4 already paid)" in _call("judge_estimate", "--judge", judge.name)
    with pytest.raises(CommandError, match="no judge named"):
        _call("judge_run", "--judge", "nobody")


def test_run_command_resumes_a_budget_stopped_run(server):
    m1, m2 = make_models("m1", "m2")
    make_comparison(m1, m2)
    server.responder = lambda body: "Overall, Response A is better."
    make_judge(server, name="capped")
    out = _call("judge_run", "--judge", "capped", "--budget", "0", "--concurrency", "1",
                "--quiet")
    assert "budget_stopped" in out and server.call_count == 0
    run = JudgeRun.objects.get()
    out = _call("judge_run", "--resume", str(run.uuid), "--budget", "1", "--quiet",
                "--concurrency", "1")
    assert "done · 2/2" in out and server.call_count == 2


def test_ablation_round_trip_through_the_commands(server, tmp_path):
    make_conversation_instance()
    exported = tmp_path / "ablation.jsonl"
    call_command("export_ablation", "--out", str(exported), stderr=StringIO())
    records = [json.loads(line) for line in exported.read_text().splitlines()]
    assert len(records) == 3
    for record in records:
        for turn in record["turns"]:
            turn["response"] = turn["response"] or f"Model X turn {turn['turn']}"
    answers = tmp_path / "answers.jsonl"
    answers.write_text("\n".join(json.dumps(r) for r in records))
    out = _call("import_ablation", str(answers), "--model", "Model X", "--comparisons")
    assert "3 conversation(s) stored" in out and "3 comparison(s)" in out
    assert Response.objects.filter(model__name="Model X").count() == 9
    server.responder = lambda body: "Overall, Response A is better."  # model wins every time
    make_judge(server, name="conv-judge", kind="multi_turn")
    _call("judge_run", "--judge", "conv-judge", "--concurrency", "1", "--quiet")
    # position-biased stand-in: A in both orderings -> ties everywhere -> 50% win rates
    assert set(Judgment.objects.values_list("choice", flat=True)) == {"tie"}
    table = _call("ablation_table", "--judge", "conv-judge")
    header, row = table.splitlines()[1:3]
    assert header.split("\t")[:3] == ["Model", "R1", "R2"]
    assert row.split("\t")[:3] == ["Model X", "50.00", "50.00"]
    assert "50.00(+0.00)" in row
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"instance": "00000000-0000-0000-0000-000000000000", "condition": '
                   '"generated", "responses": {}}\n')
    with pytest.raises(CommandError, match="line 1"):
        _call("import_ablation", str(bad), "--model", "Model Y")


@pytest.mark.django_db(transaction=True)
def test_celery_fan_out_runs_the_lanes(server):
    """--celery: the service queues the run after commit (eager Celery in tests: a background
    thread), dispatch starts judge.concurrency lane tasks that drain it, the command follows."""
    m1, m2 = make_models("m1", "m2")
    for _ in range(3):
        make_comparison(m1, m2)
    server.responder = lambda body: "Overall, Response A is better."
    make_judge(server, name="celery-judge", concurrency=3)
    out = _call("judge_run", "--judge", "celery-judge", "--celery", "--quiet")
    assert "done · 6/6 units" in out and server.call_count == 6
