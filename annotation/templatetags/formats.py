"""How the product's pages write money and moments: ``{% load formats %}``, then
``{{ run.cost|money }}`` ("$0.27") and ``{{ run.created_at|when }}`` ("2026-11-26 03:42 UTC").

One module, so every page writes them the same way. Pages round for reading; downloads (CSV,
JSON, the API) keep full precision, and ``money`` puts the exact amount in a tooltip when
rounding hid something (``money_title``)."""
from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal, InvalidOperation

from django import template
from django.utils import dateformat, timezone

register = template.Library()

EMPTY = "—"
MOMENT_FORMAT = "Y-m-d H:i T"  # one format everywhere, with the zone it is shown in


def _decimal(value) -> Decimal | None:
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        return Decimal(str(value))
    except (InvalidOperation, ValueError):
        return None


@register.filter
def money(value, places: int = 2) -> str:
    """0.272216 → "$0.27"; 1234.5 → "$1,234.50"; -0.5 → "-$0.50"; None/"" → "—"."""
    amount = _decimal(value)
    if amount is None:
        return EMPTY
    places = int(places)
    rounded = f"{abs(amount):,.{places}f}"
    return f"{'-' if amount < 0 and Decimal(rounded.replace(',', '')) else ''}${rounded}"


@register.filter
def money_title(value) -> str:
    """The exact amount when ``money`` rounded it ("0.272216"), else "" (for a title="…")."""
    amount = _decimal(value)
    if amount is None or amount == amount.quantize(Decimal("0.01")):
        return ""
    return f"exactly ${amount.normalize():f}"


@register.filter
def when(value) -> str:
    """An aware datetime in the page's time zone, with its name: "2026-11-26 03:42 UTC". A date
    alone is written "2026-11-26"; None → "—"."""
    if value is None or value == "":
        return EMPTY
    if isinstance(value, datetime):
        if timezone.is_aware(value):
            value = timezone.localtime(value)
        return dateformat.format(value, MOMENT_FORMAT).strip()
    if isinstance(value, date):
        return dateformat.format(value, "Y-m-d")
    return str(value)


@register.filter
def hit_type(slug) -> str:
    """A HIT type's human name from the registry ('pairwise_ab' → its title); a value that is
    no registered HIT type is shown as it is."""
    from annotation.engine.hit_types import get_hit_type

    try:
        return get_hit_type(str(slug)).title
    except LookupError:
        return str(slug)
