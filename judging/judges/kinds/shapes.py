"""The two shapes a judge kind takes, and the parsers that read its answers.

``PairwiseKind``: A/B verdicts on comparisons, asked in both orderings (position bias), stored
as one pairwise ``Judgment`` per turn with the orderings combined. ``GradingKind``: grades of
responses, asked once, stored as score judgments (a conversation's per-turn grades on that
turn's response). A kind module subclasses one of them and adds its items and prompts.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from django.db.models import Q

from annotation.models import Instance
from judging.parsers import (
    combine_orderings,
    parse_direct_grade,
    parse_extraction,
    parse_pairwise,
    parse_rubric_score,
)

from ...models import Comparison, Judgment, Response
from ..models import JudgeRun
from . import JudgeKind

ORDERINGS = ("AB", "BA")


# ---------------------------------------------------------------- parsers


class VerdictParser:
    """'A' or 'B' from a judge's answer (as shown); an extraction call's 'unknown' is a tie."""

    extraction_template = "extract_verdict"
    score_range = (0, 10)  # what the extraction prompt is rendered with (it shows no scale)

    def strict(self, text: str) -> tuple[str, float | None, str] | None:
        """(verdict, score, feedback) when the strict parser accepts ``text``."""
        verdict = parse_pairwise(text)
        return (verdict, None, "") if verdict else None

    def from_extraction(self, text: str) -> tuple[str, float | None]:
        return parse_extraction(text), None

    def feedback(self, text: str) -> str:
        return ""


@dataclass(frozen=True)
class GradeParser:
    """A grade within ``score_range`` (whole numbers only when ``whole``); ``strict`` reads
    the kind's own answer format, the extraction answer is read as a plain rating."""

    score_range: tuple[int, int]
    strict_grade: Callable[[str], tuple[str, float] | None]  # (feedback, grade)
    whole: bool = False
    extraction_template: str = "extract_rating"

    def strict(self, text: str) -> tuple[str, float | None, str] | None:
        """A grade off the scale is no strict answer: the extraction call reads it again."""
        parsed = self.strict_grade(text)
        if parsed is None or not self._on_scale(parsed[1]):
            return None
        return "", parsed[1], parsed[0]

    def _on_scale(self, score: float) -> bool:
        low, high = self.score_range
        return low <= score <= high and (not self.whole or score == int(score))

    def feedback(self, text: str) -> str:
        parsed = self.strict_grade(text)
        return parsed[0] if parsed else ""

    def from_extraction(self, text: str) -> tuple[str, float | None]:
        score = parse_direct_grade(text)
        if score is None or not self._on_scale(score):
            return "unknown", None
        return "", score


def rubric_grade(text: str) -> tuple[str, float] | None:
    """Prometheus' "Feedback: … [RESULT] n" (the feedback is kept)."""
    parsed = parse_rubric_score(text)
    return (parsed[0], float(parsed[1])) if parsed else None


def direct_grade(text: str) -> tuple[str, float] | None:
    """ConvBench's 0–10 rating (no feedback kept)."""
    score = parse_direct_grade(text)
    return ("", score) if score is not None else None


# ---------------------------------------------------------------- shapes


class PairwiseKind(JudgeKind):
    pairwise = True
    parser: ClassVar[VerdictParser] = VerdictParser()

    def orderings(self) -> tuple[str, ...]:
        return ORDERINGS

    def item_model(self):
        return Comparison

    def scope(self, items: list) -> str:
        return JudgeRun.Scope.COMPARISONS

    def judgment_rows(self, item, results, judgment):
        """One verdict per turn, the two orderings combined (a split is a tie)."""
        ab, ba = results.get("AB", {}), results.get("BA", {})
        rows = []
        for turn in ab:
            choice = combine_orderings(ab.get(turn), ba.get(turn))
            rows.append(judgment(turn, comparison=item, choice=choice,
                                 feedback=f"A/B order: {ab.get(turn)}; B/A order: "
                                          f"{ba.get(turn)} (as shown)"))
        return rows, "comparison"


class GradingKind(JudgeKind):
    parser: ClassVar[GradeParser]

    def orderings(self) -> tuple[str, ...]:
        return ("",)

    def item_model(self):
        return Response

    def scope(self, items: list) -> str:
        if {r.instance.kind for r in items} == {Instance.Kind.CONVERSATION}:
            return JudgeRun.Scope.CONVERSATIONS
        return JudgeRun.Scope.RESPONSES

    def judgment_rows(self, item, results, judgment):
        """One score per turn; a conversation's per-turn grades go to that turn's response
        (read at once), its overall grade to the response judged."""
        response, result = item, results[""]
        turns = [t for t in result if t not in ("feedback", "", "overall")]
        by_turn = {}
        if turns:
            for r in Response.objects.filter(
                    instance_id=response.instance_id, model_id=response.model_id,
                    condition=response.condition, turn__in=[int(t) for t in turns]
            ).order_by("-pk"):
                by_turn[str(r.turn)] = r
        rows = [judgment(turn, kind=Judgment.Kind.SCORE, response=by_turn.get(turn, response),
                         score=score, feedback=result.get("feedback", ""))
                for turn, score in result.items() if turn != "feedback"]
        if response.instance.kind != Instance.Kind.CONVERSATION:
            return rows, "response"
        return rows, Q(response__instance_id=response.instance_id,
                       response__model_id=response.model_id,
                       response__condition=response.condition)

    @staticmethod
    def graded_responses(study_id: int):
        """Responses of the study a grader may take (never the reference's)."""
        return Response.objects.filter(model__is_reference=False, instance__study_id=study_id)
