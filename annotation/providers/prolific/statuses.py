"""Prolific's submission statuses and review rules, as data (pure: no Django).

A Prolific submission is RESERVED (a place held), ACTIVE (the participant is working),
AWAITING REVIEW (finished with our completion code), APPROVED, REJECTED, RETURNED (the
participant gave the place back), TIMED-OUT (Prolific's maximum time passed) or SCREENED OUT
(turned away by a screener, paid a fixed reward). RETURNED, TIMED-OUT and SCREENED OUT give
the place back to Prolific's pool, so the lease here is released at the same moment
(``base.RELEASES_PLACE``).
"""

#: Prolific's status -> the normalised status of ``RemoteSubmission``.
STATUS = {
    "RESERVED": "active",
    "ACTIVE": "active",
    "AWAITING REVIEW": "submitted",
    "APPROVED": "approved",
    "REJECTED": "rejected",
    "RETURNED": "returned",
    "TIMED-OUT": "timed_out",
    "SCREENED OUT": "screened_out",
}

#: The categories Prolific accepts on a rejection (its submission-transition reference).
REJECTION_CATEGORIES = frozenset({
    "TOO_QUICKLY", "TOO_SLOWLY", "FAILED_INSTRUCTIONS", "INCOMP_LONGITUDINAL",
    "FAILED_CHECK", "LOW_EFFORT", "MALINGERING", "NO_CODE", "BAD_CODE", "NO_DATA",
    "UNSUPP_DEVICE", "OTHER",
})
REJECTION_MIN_CHARS = 100  # Prolific refuses a shorter rejection message
REJECTION_MAX_CHARS = 2000  # kept well inside what the participant's page shows
_REJECT_PAD = (" Your submission did not meet the study's quality checks, which are described in"
               " the instructions. Thank you for your time.")


class RejectionRefused(ValueError):
    """A rejection Prolific would refuse, caught before the call."""


def normalised(prolific_status: str) -> str:
    return STATUS.get((prolific_status or "").strip().upper(), "other")


def rejection_message(reason: str, category: str = "FAILED_CHECK") -> tuple[str, str]:
    """(message, category) ready for Prolific: the category must be one of Prolific's, the
    reason must say something, and a short reason is completed with a standard sentence
    (Prolific wants at least ``REJECTION_MIN_CHARS`` characters)."""
    category = (category or "").strip().upper()
    if category not in REJECTION_CATEGORIES:
        raise RejectionRefused(
            f"Unknown Prolific rejection category {category!r}; use one of "
            f"{', '.join(sorted(REJECTION_CATEGORIES))}.")
    reason = (reason or "").strip()
    if not reason:
        raise RejectionRefused("A Prolific rejection needs a message the participant can read.")
    if len(reason) > REJECTION_MAX_CHARS:
        raise RejectionRefused(f"A Prolific rejection message is at most {REJECTION_MAX_CHARS} "
                               f"characters (this one has {len(reason)}).")
    if len(reason) < REJECTION_MIN_CHARS:
        reason += _REJECT_PAD
    return reason, category
