"""A batch's Prolific audience as stored on its marketplace settings: filters by Prolific's
filter id with their choices (``selected_values``) or bounds (``selected_range``), the shape
Prolific's study and eligibility-count endpoints take. Checked on save so a typo is refused
with its position instead of reaching Prolific at launch."""
import re
from decimal import Decimal

from django.core.exceptions import ValidationError

GROUP_FILTERS = frozenset({"participant_group_allowlist", "participant_group_blocklist",
                           "previous_studies_blocklist", "previous_studies_allowlist"})

_FILTER_SET_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def validate_filter_set_id(value: str) -> None:
    """A filter set id goes into an API path, so only Prolific's id characters pass."""
    if value and not _FILTER_SET_ID.fullmatch(value):
        raise ValidationError("A Prolific filter set id is letters, digits, - and _ only.")


def validate_filters(value) -> None:
    if not isinstance(value, list):
        raise ValidationError("Prolific filters must be a JSON list of filter objects.")
    for i, item in enumerate(value, 1):
        where = f"Prolific filter {i}"
        if not isinstance(item, dict) or not isinstance(item.get("filter_id"), str) \
                or not item["filter_id"].strip():
            raise ValidationError(f"{where}: an object with a filter_id is needed.")
        if item["filter_id"] in GROUP_FILTERS:
            raise ValidationError(f"{where}: {item['filter_id']} is set by the deployment "
                                  "(blocklist, qualification, new participants only).")
        unknown = sorted(set(item) - {"filter_id", "selected_values", "selected_range"})
        if unknown:
            raise ValidationError(f"{where}: unknown key(s) {', '.join(unknown)}.")
        values, bounds = item.get("selected_values"), item.get("selected_range")
        if (values is None) == (bounds is None):
            raise ValidationError(f"{where}: give selected_values or selected_range.")
        if values is not None and (not isinstance(values, list) or not values
                                   or not all(isinstance(v, str) for v in values)):
            raise ValidationError(f"{where}: selected_values must be a list of choice ids.")
        if bounds is not None and (
                not isinstance(bounds, dict) or not bounds
                or set(bounds) - {"lower", "upper"}
                or not all(isinstance(b, int | float) and not isinstance(b, bool)
                           for b in bounds.values())):
            raise ValidationError(f"{where}: selected_range takes numeric lower and/or upper.")


def screen_out_bounds_problem(screen_out_reward, reward) -> str:
    """Why a screen-out reward is out of bounds ("" when it is not): more than 0 and at most
    the full reward (a screened-out participant did less than the task)."""
    screen_out_reward, reward = Decimal(screen_out_reward), Decimal(reward)
    if screen_out_reward <= 0:
        return "The screen-out reward must be more than 0."
    if screen_out_reward > reward:
        return (f"The screen-out reward ({screen_out_reward:.2f}) cannot be more than the "
                f"reward ({reward:.2f}).")
    return ""
