"""Leaderboards per judge and split, computed by the same pure functions for every judge
(``judging.ratings`` for pairwise verdicts, ``judging.scores`` for grades), so the human and
the automatic leaderboards are comparable.

Boards carry full precision (API, JSON downloads, ``ratings --format json``); only what people
read is rounded: the page (template filters) and the CSV (``CSV_DECIMALS``).

A pairwise board is honest about thin data (``judging.thin_data``): a model with fewer than
``LEADERBOARD_MIN_MATCHES`` matches is provisional (listed last, no rank), ranks are among the
ranked models only, and ``ci_text`` is the interval clipped to what the data supports.
Trial batches' votes are left out unless ``include_trial``.

A pairwise board's ``aggregation`` (every vote a match, or one match per item under a
reliability model) and ``both_bad`` (a tie, or left out) are ``judging.vote_aggregation``'s;
score boards hold grades, which neither applies to.
"""
import io
import warnings
from dataclasses import asdict, dataclass, field

from django.conf import settings

from annotation.core import csv_safety

from . import elo_state, folded_counts, ratings, scores, thin_data, vote_aggregation
from .judges.models import Judge
from .selectors import (
    HUMAN,
    RATING_IDS,
    aggregated_rows,
    counted_pairs,
    folding,
    model_names,
    pairwise_judgments_encoded,
    pairwise_judgments_qs,
    reference_model_name,
    score_judgments,
)

CSV_COLUMNS = ["rank", "model", "rating", "ci_low", "ci_high", "elo", "matches",
               "win_rate_vs_reference", "n_vs_reference", "is_reference", "provisional"]
SCORE_CSV_COLUMNS = ["rank", "model", "mean", "ci_low", "ci_high", "n", "judgments",
                     "is_reference"]
# Decimals kept in the CSV, a table for reading (ratings ~1000, grades 0–10, rates 0–1).
CSV_DECIMALS = {"rating": 1, "ci_low": 1, "ci_high": 1, "elo": 1, "win_rate_vs_reference": 4,
                "mean": 3}


@dataclass
class Leaderboard:
    judge: str
    split: str
    judgments: int
    reference: str | None
    bootstrap_rounds: int
    rows: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    min_matches: int = 0  # fewer matches: provisional (no rank)
    ci_span: list[float] | None = None  # what shown intervals (``ci_text``) are clipped to
    include_trial: bool = False
    aggregation: str = vote_aggregation.MAJORITY  # majority: a match per vote; else per item
    both_bad: str = "tie"  # "both bad" votes rated as ties, or left out ("exclude")

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def ranked_rows(self) -> list[dict]:
        return [r for r in self.rows if not r["provisional"]]

    @property
    def provisional_rows(self) -> list[dict]:
        return [r for r in self.rows if r["provisional"]]


def pairwise_board_inputs(judge: str = HUMAN, split: str = "all", *,
                          exclude_blocked: bool = False, include_trial: bool = False,
                          both_bad: str = "tie", study=None) -> elo_state.BoardInputs | None:
    """Counts and online Elo of a board counting every vote as a match (``elo_state``): human
    votes are folded forward as they arrive; a judge's later generation can supersede its
    earlier verdicts, so its boards are rebuilt from the counts each time."""
    return elo_state.board_inputs(
        pairwise_judgments_qs(judge=judge, split=split, exclude_blocked=exclude_blocked,
                              include_trial=include_trial, both_bad=both_bad, study=study),
        **folding(judge, study, exclude_blocked=exclude_blocked, include_trial=include_trial))


def leaderboard_build(judge: str = HUMAN, split: str = "all", *, exclude_blocked: bool = False,
                      include_trial: bool = False, bootstrap_rounds: int = 1000, seed: int = 0,
                      min_matches: int | None = None,
                      aggregation: str = vote_aggregation.MAJORITY,
                      both_bad: str = "tie", study=None) -> Leaderboard:
    """Bradley-Terry rating with bootstrap 95 % CI and rank, online Elo, matches and the win
    rate against the human-verified reference (with n): ranked models best first, then the
    provisional ones (``min_matches``: the setting ``LEADERBOARD_MIN_MATCHES`` unless given).
    ``judgments`` counts the matches rated: votes, or items under a reliability model."""
    min_matches = settings.LEADERBOARD_MIN_MATCHES if min_matches is None else min_matches
    reference = reference_model_name(study)
    board = Leaderboard(judge, split, 0, reference, bootstrap_rounds, min_matches=min_matches,
                        include_trial=include_trial, aggregation=aggregation, both_bad=both_bad)
    counting = {"judge": judge, "split": split, "exclude_blocked": exclude_blocked,
                "include_trial": include_trial, "both_bad": both_bad, "study": study}
    if vote_aggregation.check_aggregation(aggregation) == vote_aggregation.MAJORITY:
        inputs = pairwise_board_inputs(**counting)
        if inputs is None:
            return board
        models, wins, ties = counted_pairs(inputs.counts)
        names = model_names(list(inputs.elo))
        elo = {names[pk]: rating for pk, rating in inputs.elo.items()}
        board.judgments = sum(n for *_, n in inputs.counts)
    else:
        judgments = pairwise_judgments_encoded(aggregation=aggregation, **counting)
        if judgments is None:
            return board
        models, wins, ties = ratings.pair_counts(judgments)
        elo = ratings.online_elo(judgments)
        board.judgments = len(judgments)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ratings.RatingsWarning)
        table = ratings.leaderboard(
            ratings.Counted(models, wins, ties, elo),
            reference=reference if reference in models else None,
            bootstrap_rounds=bootstrap_rounds, seed=seed)
    board.warnings = sorted({str(w.message) for w in caught})
    rows = [{"model": r.model, "rating": r.bt_rating,
             "ci_low": r.ci_low, "ci_high": r.ci_high, "elo": r.elo, "matches": r.matches,
             "win_rate_vs_reference": r.win_rate_vs_reference,
             "n_vs_reference": r.n_vs_reference, "is_reference": r.model == reference}
            for r in table]
    board.rows, span = thin_data.settle(rows, min_matches)
    board.ci_span = list(span) if span else None
    return board


@dataclass
class ScoreLeaderboard:
    """One source's grades per model. ``scale`` is the range a grading judge is asked for
    (None for humans and imported sources: read ``observed_min`` / ``observed_max``)."""

    judge: str
    split: str
    judgments: int
    items: int
    scale: list[int] | None
    observed_min: float | None
    observed_max: float | None
    bootstrap_rounds: int
    rows: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def declared_scale(source: str) -> list[int] | None:
    """The grading range of the judge called ``source`` (its newest version), if it is one."""
    if source == HUMAN:
        return None
    judge = Judge.objects.filter(name=source).order_by("-created_at", "-pk").first()
    scale = judge.score_range if judge is not None else None
    return list(scale) if scale else None


def score_leaderboard_build(judge: str = HUMAN, split: str = "all", *,
                            exclude_blocked: bool = False, include_trial: bool = False,
                            bootstrap_rounds: int = 1000, seed: int = 0,
                            study=None) -> ScoreLeaderboard:
    """Mean grade per model with a bootstrap 95 % CI over items, rank and n, best first, for
    one source (scales differ between sources, so boards are never merged)."""
    rows = score_judgments(judge=judge, split=split, exclude_blocked=exclude_blocked,
                           include_trial=include_trial, study=study)
    grades = [r[2] for r in rows]
    board = ScoreLeaderboard(judge, split, len(rows), len({(r[0], r[1]) for r in rows}),
                             declared_scale(judge), min(grades, default=None),
                             max(grades, default=None), bootstrap_rounds)
    reference = reference_model_name(study)
    board.rows = [{"rank": r.rank, "model": r.model, "mean": r.mean, "ci_low": r.ci_low,
                   "ci_high": r.ci_high, "n": r.n, "judgments": r.judgments,
                   "is_reference": r.model == reference}
                  for r in scores.score_board(rows, rounds=bootstrap_rounds, seed=seed)]
    return board


def category_win_rates(judge: str = HUMAN, *, exclude_blocked: bool = False,
                       include_trial: bool = False,
                       aggregation: str = vote_aggregation.MAJORITY,
                       both_bad: str = "tie", study=None) -> dict:
    """{category: {model: (win rate vs reference, n)}} (VisIT-Bench fig. 8). Win rates need
    only counts, so the database counts the verdicts per (pair, outcome, category): a few
    thousand rows instead of one per verdict. Under a reliability model, one verdict per
    item (``aggregated_rows``)."""
    reference = reference_model_name(study)
    qs = (pairwise_judgments_qs(judge=judge, exclude_blocked=exclude_blocked,
                                include_trial=include_trial, both_bad=both_bad, study=study)
          .exclude(comparison__instance__family__isnull=True))
    category = "comparison__instance__family__name"
    if vote_aggregation.check_aggregation(aggregation) == vote_aggregation.MAJORITY:
        rows = [(*cell, n) for cell, n in folded_counts.counts(
            qs, (*RATING_IDS, category),
            **folding(judge, study, exclude_blocked=exclude_blocked, include_trial=include_trial)
        ).items()]
    else:
        rows = [(*row, 1) for row in aggregated_rows(qs.order_by("created_at", "pk"),
                                                     aggregation, category)]
    names = model_names({r[0] for r in rows} | {r[1] for r in rows})
    by_category: dict[str, tuple[list, list]] = {}
    for a, b, choice, category, n in rows:
        cells, times = by_category.setdefault(category, ([], []))
        cells.append((names[a], names[b], choice))
        times.append(n)
    return {category: ratings.win_rates_vs(cells, reference, times=times)
            for category, (cells, times) in sorted(by_category.items())
            if reference and any(reference in r[:2] for r in cells)}


def _csv(rows: list[dict], columns: list[str]) -> str:
    out = io.StringIO()
    writer = csv_safety.SafeDictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(k, row[k]) for k in columns})
    return out.getvalue()


def _cell(column: str, value):
    if value is None:
        return ""
    if column in CSV_DECIMALS:
        return round(value, CSV_DECIMALS[column])
    return value


def leaderboard_csv(board: Leaderboard) -> str:
    return _csv(board.rows, CSV_COLUMNS)


def score_leaderboard_csv(board: ScoreLeaderboard) -> str:
    return _csv(board.rows, SCORE_CSV_COLUMNS)
