"""Combining workers' verification answers into one outcome (pure, no Django)."""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

CAPTION, RESPONSE = "caption_underspecified", "response_wrong"


def decide_verification(answers: Iterable[Mapping]) -> tuple[bool, str, bool]:
    """(verified, reason, harmful) from answers ``{"correct": "yes"|"no", "reason", "harmful"}``.

    Majority of Yes verifies; a tie rejects (a reference must be clearly right). The reason is
    the commoner one among the No answers (response first on a tie: the caption was judged good
    enough by more people). Any harmful flag flags the instance.
    """
    answers = list(answers)
    if not answers:
        raise ValueError("no answers")
    yes = sum(a["correct"] == "yes" for a in answers)
    harmful = any(a.get("harmful") for a in answers)
    if yes * 2 > len(answers):
        return True, "", harmful
    reasons = Counter(a.get("reason") for a in answers if a["correct"] == "no")
    reason = CAPTION if reasons[CAPTION] > reasons[RESPONSE] else RESPONSE
    return False, reason, harmful
