"""What a report is asked for: ``ReportParams``, validated once and stored with the report."""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import selectors
from ..metrics.registry import check_names, default_metrics

MAJORITY = "majority"
# ``statistics.worker_models.MODELS``, spelled out: importing the statistics package here would
# load SciPy in every web worker at boot (tests/test_gunicorn_config.py); a test keeps the two
# equal.
AGGREGATIONS = (MAJORITY, "dawid-skene", "mace")


@dataclass
class ReportParams:
    judges: list[str] | None = None  # None: every automatic judge with verdicts
    split: str = "all"
    seed: int = 0
    metrics: list[str] = field(default_factory=default_metrics)
    bootstrap_rounds: int = 1000
    exclude_blocked: bool = False
    include_trial: bool = False  # count the votes of trial batches (left out by default)
    # The human labels the headline accuracy is measured against: the plain majority (the
    # papers' way) or a reliability model's weighted labels; both are reported either way.
    aggregation: str = MAJORITY
    judge_families: dict[str, str] = field(default_factory=dict)
    metric_options: dict = field(default_factory=dict)
    # The study read (its id; None: the default study). Not a parameter of the numbers but
    # the report's scope, kept on ``Report.study``: left out of ``as_dict`` so a report's
    # stored parameters and data read the same as before studies existed.
    study: int | None = field(default=None, compare=False)

    def as_dict(self) -> dict:
        return {"judges": self.judges, "split": self.split, "seed": self.seed,
                "metrics": list(self.metrics), "bootstrap_rounds": self.bootstrap_rounds,
                "exclude_blocked": self.exclude_blocked, "include_trial": self.include_trial,
                "aggregation": self.aggregation,
                "judge_families": dict(self.judge_families),
                "metric_options": dict(self.metric_options)}

    @classmethod
    def from_dict(cls, d: dict) -> ReportParams:
        p = cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__
                   and k != "study"})
        if p.bootstrap_rounds < 0 or p.bootstrap_rounds > 10_000:
            raise ValueError("bootstrap_rounds must be within 0..10000")
        if p.aggregation not in AGGREGATIONS:
            raise ValueError(f"aggregation must be one of {', '.join(AGGREGATIONS)}, "
                             f"got {p.aggregation!r}")
        selectors.split_check(p.split)  # raises UnknownSplit
        check_names(p.metrics)
        return p


def read_pairwise_data(params: ReportParams) -> selectors.PairwiseData:
    """The split's pairwise judgments as the report asks for them (here, not beside the
    statistics: the report service starts reading them before SciPy & co. are imported)."""
    return selectors.pairwise_data(params.split, params.judges, params.exclude_blocked,
                                   params.include_trial, study=params.study)
