"""ConvBench hierarchical ablation: export with substituted history, import (atomic), the
comparisons against the reference, and Table 1 / Table 8 on a hand-built case."""
import io
import json

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from judging.judges.ablation import (
    ablation_comparisons,
    ablation_table,
    export_jsonl,
    import_responses,
)
from judging.judges.table import format_row, table1_row
from judging.models import Judgment, Response
from tests.judging.judges.conftest import make_conversation_instance, make_judge

pytestmark = pytest.mark.django_db


def _export(conditions):
    buf = io.StringIO()
    export_jsonl(buf, conditions=conditions)
    return [json.loads(line) for line in buf.getvalue().splitlines()]


def _fill(record, tag):
    for turn in record["turns"]:
        if turn["response"] is None:
            turn["response"] = f"{tag} answer to turn {turn['turn']}"
    return json.dumps(record)


def test_export_substitutes_the_reference_history():
    instance = make_conversation_instance()
    records = {r["condition"]: r for r in _export(
        ["generated", "perfect_perception", "perfect_perception_reasoning"])}
    pp = records["perfect_perception"]
    assert pp["instance"] == str(instance.uuid)
    assert [(t["turn"], t["substituted"]) for t in pp["turns"]] == [(1, True), (2, False),
                                                                    (3, False)]
    assert pp["turns"][0]["response"] == f"Reference turn 1 of {instance.pk}."
    assert [m["role"] for m in pp["messages"]] == ["user", "assistant", "user"]
    assert pp["messages"][-1]["content"] == f"Turn 2 question about {instance.pk}?"
    ppr = records["perfect_perception_reasoning"]
    assert [m["role"] for m in ppr["messages"]] == ["user", "assistant"] * 2 + ["user"]
    assert [m["role"] for m in records["generated"]["messages"]] == ["user"]
    assert pp["image_captions"] == ["A red square on white."]


def test_import_stores_all_turns_and_rejects_bad_lines_atomically():
    make_conversation_instance()
    lines = [_fill(r, "M") for r in _export(["generated", "perfect_perception"])]
    assert import_responses(model_name="Model M", lines=lines) == 2
    pp = dict(Response.objects.filter(condition="perfect_perception").values_list("turn", "text"))
    assert pp[1].startswith("Reference turn 1") and pp[2] == "M answer to turn 2"
    broken = json.loads(lines[1])
    broken["turns"][2]["response"] = None
    with pytest.raises(ValidationError, match="line 2: turn 3 response is missing"):
        import_responses(model_name="Model N", lines=[_fill(json.loads(lines[0]), "N"),
                                                      json.dumps(broken)])
    assert not Response.objects.filter(model__name="Model N").exists()
    with pytest.raises(ValidationError, match="line 1"):
        import_responses(model_name="Model N", lines=['{"condition": "nope"}'])


def test_ablation_comparisons_pit_each_condition_against_the_reference():
    make_conversation_instance()
    import_responses(model_name="Model M", lines=[_fill(r, "M") for r in _export(
        ["generated", "perfect_perception", "perfect_perception_reasoning"])])
    from judging.models import EvalModel

    model = EvalModel.objects.get(name="Model M")
    comparisons = ablation_comparisons(model=model)
    assert len(comparisons) == 3
    mine = [c.response_a if c.response_a.model_id == model.pk else c.response_b
            for c in comparisons]
    assert {r.condition for r in mine} == {
        "generated", "perfect_perception", "perfect_perception_reasoning"}
    assert all({c.response_a.model.is_reference, c.response_b.model.is_reference} == {True, False}
               for c in comparisons)
    assert len(ablation_comparisons(model=model, seed=7)) == 3  # found again in either order
    from judging.models import Comparison
    assert Comparison.objects.count() == 3  # created once


def test_table1_arithmetic():
    cells = {("generated", "1"): 30.0, ("generated", "2"): 20.0, ("generated", "3"): 10.0,
             ("generated", "overall"): 40.0, ("perfect_perception", "2"): 35.0,
             ("perfect_perception", "3"): 15.0, ("perfect_perception", "overall"): 45.0,
             ("perfect_perception_reasoning", "3"): 25.0,
             ("perfect_perception_reasoning", "overall"): 44.0}
    row = table1_row(cells)
    assert row["R2"] == pytest.approx(20.0) and row["R1"] == pytest.approx(30.0)
    assert (row["S2_hat_delta"], row["S3_hat_delta"], row["SO_hat_delta"]) == (15.0, 5.0, 5.0)
    assert (row["S3_tilde_delta"], row["SO_tilde_delta"]) == (10.0, -1.0)
    assert format_row("M", row)[7] == "35.00(+15.00)"
    partial = table1_row({("generated", "1"): 50.0})
    assert partial["R2"] is None and partial["S2_hat"] is None and partial["S1"] == 50.0


def test_ablation_table_from_stored_verdicts_hand_built(server):
    """Two conversations; verdicts written by hand, so every cell is known."""
    from judging.models import EvalModel

    for _ in range(2):
        make_conversation_instance()
    import_responses(model_name="Model M", lines=[_fill(r, "M") for r in _export(
        ["generated", "perfect_perception", "perfect_perception_reasoning"])])
    model = EvalModel.objects.get(name="Model M")
    judge = make_judge(server, kind="multi_turn")
    now = timezone.now()
    # 'M' = the model wins, 'R' = the reference wins, '-' = tie; written on whichever side
    # the randomizer put each of them
    plan = {"generated": {"1": "MR", "2": "M-", "3": "RR", "overall": "MR"},
            "perfect_perception": {"2": "MM", "3": "M-", "overall": "MM"},
            "perfect_perception_reasoning": {"3": "MM", "overall": "RR"}}
    comparisons = ablation_comparisons(model=model)
    assert {c.swapped for c in comparisons} == {True, False}  # both sides occur (seeded)
    seen = {}
    for c in comparisons:
        model_side = "A" if c.response_a.model_id == model.pk else "B"
        condition = (c.response_a if model_side == "A" else c.response_b).condition
        k = seen.setdefault(condition, 0)
        seen[condition] = k + 1
        for turn, outcomes in plan[condition].items():
            choice = {"M": model_side, "R": "B" if model_side == "A" else "A",
                      "-": "tie"}[outcomes[k]]
            Judgment.objects.create(comparison=c, source=judge.name, annotator=judge.ident,
                                    choice=choice, turn=turn, created_at=now)
    # Another judge's verdicts must not leak in.
    Judgment.objects.create(comparison=comparisons[0], source="other", annotator="x",
                            choice="A", turn="1", created_at=now)
    ((name, row),) = ablation_table(judge)
    assert name == "Model M"
    assert (row["S1"], row["S2"], row["S3"], row["SO"]) == (50.0, 75.0, 0.0, 50.0)
    assert row["R2"] == pytest.approx(125 / 3) and row["R1"] == pytest.approx((125 / 3 + 50) / 2)
    assert (row["S2_hat"], row["S3_hat"], row["SO_hat"]) == (100.0, 75.0, 100.0)
    assert (row["S2_hat_delta"], row["S3_hat_delta"], row["SO_hat_delta"]) == (25.0, 75.0, 50.0)
    assert (row["S3_tilde"], row["SO_tilde"]) == (100.0, 0.0)
    assert (row["S3_tilde_delta"], row["SO_tilde_delta"]) == (25.0, -100.0)


def test_direct_grading_table_averages_scores(server):
    from judging.models import EvalModel

    make_conversation_instance()
    import_responses(model_name="Model M", lines=[_fill(r, "M") for r in _export(
        ["generated", "perfect_perception"])])
    model = EvalModel.objects.get(name="Model M")
    judge = make_judge(server, kind="direct")
    now = timezone.now()
    scores = {("generated", 1): 6, ("generated", 2): 5, ("generated", 3): 4,
              ("perfect_perception", 2): 8, ("perfect_perception", 3): 7}
    for (condition, turn), score in scores.items():
        response = Response.objects.get(model=model, condition=condition, turn=turn)
        Judgment.objects.create(response=response, source=judge.name, annotator=judge.ident,
                                score=score, turn=str(turn), created_at=now)
    for condition, score in (("generated", 5.0), ("perfect_perception", 7.5)):
        response = Response.objects.get(model=model, condition=condition, turn=1)
        Judgment.objects.create(response=response, source=judge.name, annotator=judge.ident,
                                score=score, turn="overall", created_at=now)
    ((_, row),) = ablation_table(judge)
    assert (row["S1"], row["S2"], row["S3"], row["SO"], row["R2"]) == (6, 5, 4, 5.0, 5.0)
    assert (row["S2_hat"], row["S2_hat_delta"], row["SO_hat_delta"]) == (8, 3, 2.5)
    assert row["S3_tilde"] is None and row["SO_tilde_delta"] is None
