"""Which answers a choice HIT offers, per batch: A / B only (VisIT-Bench's forced choice, the
default), A / B / tie, or A / B / tie / both bad, optionally with how much better (slightly /
much). The batch stores the choice (``Batch.hit_options``); the worker's answer is checked
against it, so a forced-choice batch never receives a tie.

What each answer means downstream: "tie" and "bad" (both bad) are stored as distinct judgment
choices; ratings count a tie as half a win and "both bad" as a tie (``judging.ratings``) unless
the board leaves "both bad" out (``?both_bad=exclude``, ``judging.vote_aggregation``); the
reliability and accuracy statistics keep them as their own categories. The strength is kept
beside the choice (``Judgment.meta["strength"]``) and changes no count.
"""
from django import forms
from django.core.exceptions import ValidationError

ANSWER_SETS = {
    "ab": ("A", "B"),
    "ab_tie": ("A", "B", "tie"),
    "ab_tie_bad": ("A", "B", "tie", "bad"),
}
ANSWER_SET_LABELS = [
    ("ab", "A or B only (forced choice, as in VisIT-Bench)"),
    ("ab_tie", "A, B or tie"),
    ("ab_tie_bad", "A, B, tie or both bad"),
]
EVERY_CHOICE = ANSWER_SETS["ab_tie_bad"]
STRENGTHS = (("slightly", "slightly better"), ("much", "much better"))


class ChoiceOptionsForm(forms.Form):
    """A choice HIT's per-batch options; the initial values are the defaults."""

    answers = forms.ChoiceField(choices=ANSWER_SET_LABELS, initial="ab",
                                help_text="Which answers the worker may give.")
    strength = forms.BooleanField(required=False, initial=False,
                                  help_text="Also ask how much better (slightly / much).")


def offered(options: dict) -> tuple[str, ...]:
    """The choices a batch with these (cleaned) options offers."""
    return ANSWER_SETS[options.get("answers") or "ab"]


def options_offering(answers) -> dict:
    """The options whose answer set is exactly ``answers`` (any order), e.g. a study's allowed
    answers; a ValidationError naming the sets there are when none is."""
    wanted = set(answers)
    for key, choices in ANSWER_SETS.items():
        if set(choices) == wanted:
            return {"answers": key}
    sets = "; ".join(", ".join(c) for c in ANSWER_SETS.values())
    raise ValidationError(f"The answers {', '.join(map(str, answers))} are not an answer set a "
                          f"batch can offer (the sets: {sets}).")


def check_choice(value, options: dict, field: str = "choice", *, required: bool = True):
    """The worker's choice for ``field`` if the batch offers it, else a ValidationError that
    says what it offers. Empty: None when not ``required``."""
    if value in (None, ""):
        if required:
            raise ValidationError(f"{_label(field)}: choose one of {_listed(offered(options))}.")
        return None
    if value not in offered(options):
        raise ValidationError(f"{_label(field)}: {value!r} is not offered in this batch "
                              f"(choose {_listed(offered(options))}).")
    return value


def check_strength(value, choice, options: dict) -> str | None:
    """How much better, when the batch asks for it and a side won; None otherwise."""
    if not options.get("strength") or choice not in ("A", "B"):
        return None
    if value not in dict(STRENGTHS):
        raise ValidationError("How much better: choose slightly or much better.")
    return value


def clean_choice_gold(gold):
    """A gold answer ``{"choice": A | B | tie | bad}``: refused otherwise (a gold "C" would
    mark every worker wrong)."""
    if not isinstance(gold, dict) or gold.get("choice") not in EVERY_CHOICE:
        raise ValidationError('_gold_answer must be {"choice": "A"} or "B" (or "tie" / "bad" '
                              "in a batch that offers them)")
    return gold


def page_options(options: dict) -> dict:
    """What a choice HIT's template needs: whether to show tie, both bad and strength."""
    choices = offered(options)
    return {"offer_tie": "tie" in choices, "offer_bad": "bad" in choices,
            "ask_strength": bool(options.get("strength")), "strengths": STRENGTHS}


def _label(field: str) -> str:
    if field.startswith("turn"):
        return f"Turn {field.removeprefix('turn')}"
    return "Overall" if field == "overall" else "Your choice"


def _listed(choices) -> str:
    names = {"A": "A", "B": "B", "tie": "tie", "bad": "both bad"}
    return ", ".join(names[c] for c in choices)
