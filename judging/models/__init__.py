"""Models of the judging app. Each area keeps its tables in its own module."""
from .core import Comparison, EvalModel, Judgment, Response

__all__ = ["Comparison", "EvalModel", "Judgment", "Response"]
from ..judges.models import Judge, JudgeCall, JudgeRun, JudgeUnit  # noqa: E402,F401  automatic judges
from ..submissions.models import Submission  # noqa: E402,F401  public submissions of new models
