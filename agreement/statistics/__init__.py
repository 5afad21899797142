"""Agreement statistics between human annotators and automatic judges.

Pure numpy/scipy (no Django) so the same code serves the web app, Celery workers,
notebooks and benchmarks. Conventions follow VisIT-Bench §4.3 (accuracy of a judge
against the majority of N forced-choice human votes, split by agreement level k/N,
judge ties broken at random with a fixed seed), ConvBench appendix C (pairwise
agreement matrices between sources) and Prometheus-Vision §3 (Pearson / Kendall /
Spearman between human and judge scores, length and self-enhancement biases).

Inputs are plain lists, numpy arrays and dicts; every result is a small dataclass
with ``to_dict()`` that yields JSON-ready data (numpy scalars become Python numbers,
NaN becomes ``None``). Bad input raises ``ValueError`` with a message saying what is
wrong.

Pairwise verdicts are labels, ``"A"`` / ``"B"`` by default, plus ``"tie"`` for a
judge that declines to choose; ``None`` means "not labelled" where a function says
it accepts missing values.

Layout: ``proportions`` (CIs, McNemar), ``majority`` (human majority, judge accuracy),
``matrices`` (agreement matrix), ``reliability`` (alpha, kappas), ``correlation``,
``bias``; shared helpers live in ``_common``. Import from the package, not the modules.
"""

from ._common import DEFAULT_LABELS, LEVELS, TIE
from .bias import (
    LengthBias,
    LengthBin,
    LengthsByScore,
    ModelWinRates,
    PositionBias,
    SelfPreference,
    WinRateGap,
    length_bias,
    lengths_by_score,
    position_bias,
    self_preference,
    win_rate_gap,
)
from .correlation import (
    Correlation,
    SystemCorrelation,
    SystemScoreCorrelation,
    score_correlation,
    system_correlation,
    system_score_correlation,
)
from .majority import (
    JudgeAccuracy,
    LevelAccuracy,
    Majority,
    accuracy_vs_majority,
    compare_judges,
    human_majority,
    majority_labels,
)
from .matrices import AgreementMatrix, agreement_matrix
from .proportions import McNemarResult, ProportionCI, mcnemar_exact, proportion_ci
from .reliability import (
    AlphaResult,
    CohenKappa,
    FleissKappa,
    LeaveOneOutAgreement,
    annotations_to_matrix,
    cohen_kappa,
    cohen_kappa_ci,
    fleiss_kappa,
    fleiss_kappa_from_counts,
    krippendorff_alpha,
    krippendorff_alpha_from_counts,
    label_counts,
    leave_one_out_agreement,
    pairwise_cohen_kappa,
)

# private helpers that tests/agreement/test_statistics.py checks directly
from .reliability import _alpha_from as _alpha_from
from .reliability import _Coincidences as _Coincidences
from .reliability import _to_codes as _to_codes

__all__ = [
    "AgreementMatrix",
    "AlphaResult",
    "CohenKappa",
    "Correlation",
    "DEFAULT_LABELS",
    "FleissKappa",
    "JudgeAccuracy",
    "LEVELS",
    "LeaveOneOutAgreement",
    "LengthBias",
    "LengthBin",
    "LengthsByScore",
    "LevelAccuracy",
    "Majority",
    "McNemarResult",
    "ModelWinRates",
    "PositionBias",
    "ProportionCI",
    "SelfPreference",
    "SystemCorrelation",
    "SystemScoreCorrelation",
    "TIE",
    "WinRateGap",
    "accuracy_vs_majority",
    "agreement_matrix",
    "annotations_to_matrix",
    "cohen_kappa",
    "cohen_kappa_ci",
    "compare_judges",
    "fleiss_kappa",
    "fleiss_kappa_from_counts",
    "human_majority",
    "krippendorff_alpha",
    "krippendorff_alpha_from_counts",
    "label_counts",
    "leave_one_out_agreement",
    "length_bias",
    "lengths_by_score",
    "majority_labels",
    "mcnemar_exact",
    "pairwise_cohen_kappa",
    "position_bias",
    "proportion_ci",
    "score_correlation",
    "self_preference",
    "system_correlation",
    "system_score_correlation",
    "win_rate_gap",
]
