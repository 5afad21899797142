"""Reads of the judging app: judgments turned into the plain rows ``judging.ratings`` takes.

A split picks which verdicts count: ``all`` (one verdict per item: single-turn choices and the
overall verdict of conversations), ``single`` / ``multi`` (single- / multi-image instances),
``overall`` (conversations, whole), ``turn:1`` … ``turn:3``, and ``category:<family name>``.
Gold (attention-check) comparisons never count. ``exclude_blocked`` drops votes of blocked
workers (e.g. auto-blocked for failing gold checks).
"""
from django.db.models import Q

from annotation.models import Instance

from .models import EvalModel, Judgment
from .ratings import majority_vote

BASE_SPLITS = ["all", "single", "multi", "overall", "turn:1", "turn:2", "turn:3"]


class UnknownSplit(ValueError):
    pass


def _split_filter(split: str) -> Q:
    one_verdict = Q(turn__in=["", "overall"])
    if split == "all":
        return one_verdict
    if split == "single":
        return Q(turn="", comparison__instance__kind=Instance.Kind.SINGLE)
    if split == "multi":
        return Q(turn="", comparison__instance__kind=Instance.Kind.MULTI)
    if split == "overall":
        return Q(turn="overall")
    if split in ("turn:1", "turn:2", "turn:3"):
        return Q(turn=split[-1])
    if split.startswith("category:") and split[9:]:
        return one_verdict & Q(comparison__instance__family__name=split[9:])
    raise UnknownSplit(f"unknown split {split!r}; use one of {BASE_SPLITS} or category:<name>")


def pairwise_judgments_qs(*, judge: str = "human", split: str = "all",
                          exclude_blocked: bool = False):
    qs = (Judgment.objects.filter(kind=Judgment.Kind.PAIRWISE, source=judge,
                                  comparison__isnull=False, choice__in=["A", "B", "tie"])
          .filter(comparison__gold_choice="").filter(_split_filter(split)))
    if exclude_blocked:
        qs = qs.exclude(worker__blocked=True)
    return qs


# What ``judging.ratings`` takes per verdict: (model_a, model_b, outcome, timestamp).
RATING_ROW = ("comparison__response_a__model__name", "comparison__response_b__model__name",
              "choice", "created_at")


def pairwise_judgments(*, judge: str = "human", split: str = "all",
                       exclude_blocked: bool = False) -> list[tuple]:
    """``(model_a, model_b, outcome, timestamp)`` rows in timestamp order: the winning model is
    the comparison's on-screen side the judge chose, so randomized sides never blur it."""
    return list(
        pairwise_judgments_qs(judge=judge, split=split, exclude_blocked=exclude_blocked)
        .order_by("created_at", "pk").values_list(*RATING_ROW))


def comparison_majorities(*, judge: str = "human", split: str = "all",
                          exclude_blocked: bool = False) -> list[dict]:
    """Per comparison (and turn): the majority of its votes and the agreement level (5/5 …)."""
    votes: dict[tuple, list] = {}
    names: dict[tuple, tuple] = {}
    for uuid, turn, a, b, choice in (
        pairwise_judgments_qs(judge=judge, split=split, exclude_blocked=exclude_blocked)
        .order_by("comparison_id", "turn", "created_at")
        .values_list("comparison__uuid", "turn", "comparison__response_a__model__name",
                     "comparison__response_b__model__name", "choice")):
        votes.setdefault((uuid, turn), []).append(choice)
        names[(uuid, turn)] = (a, b)
    out = []
    for key, choices in votes.items():
        winner, agree, n = majority_vote(choices)
        a, b = names[key]
        out.append({"comparison": str(key[0]), "turn": key[1], "model_a": a, "model_b": b,
                    "winner": winner, "winner_model": {"A": a, "B": b}.get(winner),
                    "agreement": agree, "n": n, "level": f"{agree}/{n}"})
    return out


def judge_names() -> list[str]:
    """Every judge with pairwise verdicts: 'human' first, then automatic judges by name."""
    names = set(Judgment.objects.filter(kind=Judgment.Kind.PAIRWISE, comparison__isnull=False)
                .values_list("source", flat=True).distinct())
    return sorted(names, key=lambda n: (n != "human", n))


def category_names(judge: str = "human") -> list[str]:
    return sorted(set(
        pairwise_judgments_qs(judge=judge).exclude(comparison__instance__family__isnull=True)
        .values_list("comparison__instance__family__name", flat=True).distinct()))


def reference_model_name() -> str | None:
    return EvalModel.objects.filter(is_reference=True).values_list("name", flat=True).first()
