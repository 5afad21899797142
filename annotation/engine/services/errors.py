"""Errors the engine's services raise; views map them to HTTP responses."""


class EngineError(Exception):
    """Base class: a refused operation that wrote nothing."""


class NotEligible(EngineError):
    """The worker may not work on this batch (blocked, unqualified, batch not active)."""


class NotQualified(NotEligible):
    """The worker lacks a qualification the batch or its study requires: the one refusal a
    marketplace may answer with a screen-out (paid, sent back) instead of a bare refusal."""


class AnswerInvalid(EngineError):
    """The submitted answer failed the HIT type's validation."""


class TooFast(EngineError):
    """Submitted before the batch's minimum time (click-through guard)."""


class NotSubmittable(EngineError):
    """The assignment was returned and can no longer take an answer."""


class AssignmentConflict(EngineError):
    """Provider ids disagree with the assignment on record (forged or reused ids)."""
