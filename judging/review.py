"""Reads for the disagreement review: the pairwise items (comparison, turn) where the humans
split or an automatic judge disagrees with the human majority, and everything about one item.

- **Split**: at least two human votes and the largest bloc beats the next by at most one vote
  (3/2 of 5, 2/1 of 3, a 2–2 tie); "tie" votes are a bloc like the others.
- **Judge disagreement**: a judge's current verdict (``selectors.current_verdicts``) differs
  from the human majority (``ratings.majority_vote``: the unique largest bloc, else "tie").
- Gold comparisons never count, as everywhere else.

An analyst's ruling (``Judgment.ADJUDICATION``, written by ``services.adjudication``) is shown
beside the votes and never mixed with them; the latest ruling on an item is its current one,
earlier ones are shown as superseded.
"""
from collections import Counter
from dataclasses import dataclass, field

from django.db.models import Count, Q

from annotation.models import Task
from studies.models import study_pk

from .hits import conversation_turns, instance_images
from .models import Comparison, EvalModel, Judgment
from .ratings import majority_vote
from .selectors import HUMAN, current_verdicts

ANY, SPLIT, JUDGES = "any", "split", "judges"
KINDS = (ANY, SPLIT, JUDGES)
OPEN, ADJUDICATED, ALL = "open", "adjudicated", "all"
STATES = (OPEN, ADJUDICATED, ALL)
TURNS = ("", "1", "2", "3", "overall")
OUTCOMES = ("A", "B", "tie", "bad")  # "bad": both are bad, where a batch offers it


def _votes(study=None):
    """Every counted pairwise vote of any source on ``study``'s items (None: the default
    study's; gold items left out)."""
    return Judgment.objects.filter(kind=Judgment.Kind.PAIRWISE, comparison__isnull=False,
                                   choice__in=OUTCOMES, comparison__gold_choice="",
                                   study_id=study_pk(study))


def is_split(counts: dict[str, int]) -> bool:
    """At least two votes and a majority margin of at most one (a tie included)."""
    blocs = sorted(counts.values(), reverse=True) + [0]
    return sum(counts.values()) >= 2 and blocs[0] - blocs[1] <= 1


def human_majority(counts: dict[str, int]) -> str:
    return majority_vote(Counter(counts).elements())[0]


@dataclass
class ReviewRow:
    """One disputed item of the listing."""

    comparison_id: int
    turn: str
    counts: dict[str, int]
    majority: str
    split: bool
    judges: dict[str, str]  # judge -> current verdict, for the judges that disagree
    ruling: Judgment | None = None
    comparison: Comparison | None = None  # loaded for the rows of the page shown

    @property
    def level(self) -> str:
        n = sum(self.counts.values())
        return f"{max(self.counts.values())}/{n}" if n else "0/0"


@dataclass
class ReviewListing:
    rows: list[ReviewRow]
    judges: list[str] = field(default_factory=list)  # judges with verdicts on human-voted items
    pairs: list[tuple[str, str]] = field(default_factory=list)  # (value, label) of model pairs


def pair_value(model_ids) -> str:
    """A model pair as a filter value, the same whatever the sides: ``"<id>-<id>"``."""
    low, high = sorted(model_ids)
    return f"{low}-{high}"


def review_listing(*, kind: str = ANY, judge: str = "", pair: str = "",
                   state: str = OPEN, study=None) -> ReviewListing:
    """The disputed items, oldest comparison first, with what the filters offer.

    ``kind``: splits, judge disagreements or either; ``judge``: only items that judge gave a
    verdict on, disagreements counted for it alone; ``pair``: a ``pair_value``; ``state``:
    items without a ruling (``open``), with one, or all; ``study``: whose items (None: the
    default study's). Unknown values raise ValueError."""
    if kind not in KINDS or state not in STATES:
        raise ValueError(f"kind is one of {KINDS}, state one of {STATES}")
    humans: dict[tuple, dict] = {}
    models: dict[tuple, tuple] = {}
    for row in (_votes(study).filter(source=HUMAN)
                .values("comparison_id", "turn", "comparison__response_a__model_id",
                        "comparison__response_b__model_id")
                .annotate(A=Count("pk", filter=Q(choice="A")),
                          B=Count("pk", filter=Q(choice="B")),
                          tie=Count("pk", filter=Q(choice="tie")),
                          bad=Count("pk", filter=Q(choice="bad"))).order_by()):
        item = (row["comparison_id"], row["turn"])
        humans[item] = {o: row[o] for o in OUTCOMES}
        models[item] = (row["comparison__response_a__model_id"],
                        row["comparison__response_b__model_id"])
    verdicts: dict[tuple, dict[str, str]] = {}
    for comp, turn, source, choice in (
            current_verdicts(_votes(study).exclude(source=HUMAN), "comparison")
            .order_by("created_at", "pk").values_list("comparison_id", "turn", "source",
                                                       "choice")):
        if (comp, turn) in humans:
            verdicts.setdefault((comp, turn), {})[source] = choice
    rulings = current_rulings()
    rows = []
    for item in sorted(humans):
        counts, given = humans[item], verdicts.get(item, {})
        if judge:
            if judge not in given:
                continue
            given = {judge: given[judge]}
        if pair and pair_value(models[item]) != pair:
            continue
        ruling = rulings.get(item)
        if (state == OPEN and ruling) or (state == ADJUDICATED and not ruling):
            continue
        majority = human_majority(counts)
        split = is_split(counts)
        disagreeing = {j: v for j, v in sorted(given.items()) if v != majority}
        if (kind == SPLIT and not split) or (kind == JUDGES and not disagreeing) or (
                kind == ANY and not (split or disagreeing)):
            continue
        rows.append(ReviewRow(item[0], item[1], counts, majority, split, disagreeing, ruling))
    names = dict(EvalModel.objects.in_study(study).values_list("pk", "name"))
    pairs = sorted({pair_value(m) for m in models.values()},
                   key=lambda v: [names.get(int(i), "") for i in v.split("-")])
    return ReviewListing(
        rows=rows, judges=sorted({j for per in verdicts.values() for j in per}),
        pairs=[(v, " vs ".join(names.get(int(i), "?") for i in v.split("-"))) for v in pairs])


def load_comparisons(rows: list[ReviewRow]) -> list[ReviewRow]:
    """Attach each row's comparison (models, instance) in one query: for the page shown."""
    found = Comparison.objects.select_related(
        "instance", "response_a__model", "response_b__model").in_bulk(
        {r.comparison_id for r in rows})
    for r in rows:
        r.comparison = found[r.comparison_id]
    return rows


def current_rulings(comparison: Comparison | None = None) -> dict[tuple, Judgment]:
    """{(comparison id, turn): the latest ruling} (of one comparison, when given)."""
    qs = Judgment.objects.filter(kind=Judgment.Kind.ADJUDICATION)
    if comparison is not None:
        qs = qs.filter(comparison=comparison)
    return {(j.comparison_id, j.turn): j for j in qs.order_by("created_at", "pk")}


def vote_task(comparison: Comparison) -> Task | None:
    """The task whose assignments brought the item's human votes (the latest one when the
    comparison ran in several batches): where more votes on it are collected."""
    return (Task.objects.filter(assignments__judgments__comparison=comparison,
                                assignments__judgments__kind=Judgment.Kind.PAIRWISE)
            .select_related("batch").order_by("-pk").first())


def _worker_name(worker, annotator: str) -> str:
    """A local worker by their username (not ``local:user-3``), others by provider id."""
    user = worker.user if worker is not None else None
    return user.get_username() if user is not None else annotator


def review_item(comparison: Comparison, turn: str) -> dict:
    """Everything the item page shows: the instruction and images, both responses (every turn
    of a conversation), every human vote by worker, each judge's current verdict, the human
    majority, the rulings (latest first: the first is current) and the task more votes go to."""
    if turn not in TURNS:
        raise ValueError(f"turn is one of {TURNS}")
    on_item = _votes(comparison.instance.study_id).filter(comparison=comparison, turn=turn)
    humans = [{"who": _worker_name(j.worker, j.annotator), "choice": j.choice,
               "at": j.created_at, "hit": j.template_version}
              for j in on_item.filter(source=HUMAN).select_related("worker__user")
              .order_by("created_at", "pk")]
    judges = [{"judge": j.source, "ident": j.annotator, "choice": j.choice,
               "template": j.template_version, "at": j.created_at}
              for j in current_verdicts(on_item.exclude(source=HUMAN), "comparison")
              .order_by("source", "created_at", "pk")]
    counts = dict(Counter(v["choice"] for v in humans))
    counts = {o: counts.get(o, 0) for o in OUTCOMES}
    rulings = list(Judgment.objects.filter(kind=Judgment.Kind.ADJUDICATION,
                                           comparison=comparison, turn=turn)
                   .order_by("-created_at", "-pk"))
    conversation = comparison.instance.turns.exists()
    return {
        "comparison": comparison, "turn": turn,
        "instruction": comparison.instance.instruction,
        "images": instance_images(comparison.instance),
        "turns": conversation_turns(comparison) if conversation else [],
        "response_a": comparison.response_a.text, "response_b": comparison.response_b.text,
        "humans": humans, "judges": judges, "counts": counts,
        "majority": human_majority(counts) if humans else "",
        "split": is_split(counts),
        "rulings": rulings, "task": vote_task(comparison),
    }
