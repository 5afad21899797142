"""How a pairwise board counts crowd votes: its ``aggregation`` and ``both_bad`` choices.

**Aggregation.** ``majority`` (the default, the papers' way) counts every vote as one match.
A reliability model (``dawid-skene``, ``mace``) is a registered *aggregator*: it reads every
vote of the board as ``(item, worker, label)`` (an item is a comparison and turn) and returns
each item's label under the model, and the board counts **one match per item** with that label.

Why per item, and not each vote weighted by its worker's estimated accuracy: Bradley–Terry
is a likelihood over independent matches, and a weighted vote is no match at all (its weight
is not a count, the bootstrap resamples counts, and an accuracy of 50 % -- a coin -- would
still weigh half a vote). The models exist to infer each item's true outcome from its votes,
with spammers' and biased workers' votes discounted by their estimated confusion; rating those
outcomes keeps every count an integer, so the Bradley–Terry fit, its bootstrap, online Elo
and the win rates are unchanged. It is also the honest unit: the five votes on one item are
not five independent matches, so a model-weighted board has fewer matches and wider intervals
than the majority board of the same votes (and ``LEADERBOARD_MIN_MATCHES`` counts items).

**Both bad.** ``tie`` (the default) rates a "both bad" vote as a tie, half a win each way;
``exclude`` leaves those votes out before anything is counted or fitted (they say nothing
about which response is better), so matches drop by the "both bad" votes.

The models live in ``agreement`` (crowd-kit, SciPy), which ``judging`` may not import:
``agreement`` registers them here from its ``AppConfig.ready`` (as it registers the worker
page's panel), and only registered names are accepted.
"""
from collections.abc import Callable, Hashable, Sequence

MAJORITY = "majority"
BOTH_BAD = ("tie", "exclude")  # the first is the default

Vote = tuple[Hashable, Hashable | None, str]  # (item, worker or None, label)
Aggregator = Callable[[Sequence[Vote]], dict[Hashable, str]]

_AGGREGATORS: dict[str, Aggregator] = {}


class UnknownChoice(ValueError):
    """A board parameter outside its choices (a 400 for the page and the API)."""


def register(name: str, aggregator: Aggregator) -> Aggregator:
    """Offer ``name`` as a board aggregation (``ready`` may run twice: the last one wins)."""
    if name == MAJORITY:
        raise ValueError(f"{MAJORITY!r} is built in")
    _AGGREGATORS[name] = aggregator
    return aggregator


def aggregations() -> tuple[str, ...]:
    """The names a board accepts, the default first."""
    return (MAJORITY, *_AGGREGATORS)


def check_aggregation(name: str | None) -> str:
    name = name or MAJORITY
    if name not in aggregations():
        raise UnknownChoice(f"aggregation must be one of {', '.join(aggregations())}, "
                            f"got {name!r}")
    return name


def check_both_bad(value: str | None) -> str:
    value = value or BOTH_BAD[0]
    if value not in BOTH_BAD:
        raise UnknownChoice(f"both_bad must be one of {', '.join(BOTH_BAD)}, got {value!r}")
    return value


def item_labels(name: str, votes: Sequence[Vote]) -> dict[Hashable, str]:
    """Each item's label under the registered model ``name`` (not ``majority``, which keeps
    every vote)."""
    return _AGGREGATORS[check_aggregation(name)](votes)
