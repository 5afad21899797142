"""Money amounts (rewards, bonuses, budgets, caps, fee rates) parsed one way, whoever sends them.

Why: ``Decimal(str(x))`` takes "NaN", "Infinity", "1e999" and "٣"; comparing a NaN raises a bare
``decimal.InvalidOperation``, and a value wider than its column either fails the INSERT
(PostgreSQL: a 500) or is stored and cannot be read back (SQLite). So every service that accepts
an amount first asks its ``MoneyField``, which refuses with a ``ValidationError`` naming the
amount and its bound, and otherwise returns a Decimal that the column stores exactly.

A bound is the lower of a setting (``MAX_REWARD_USD`` …, read at call time) and what the column
holds (``max_digits`` / ``decimal_places``). Amounts are refused, never rounded: a bonus of
0.005 is a typo to ask about, not half a cent to guess.
"""
import re
from decimal import ROUND_HALF_UP, Decimal, localcontext

from django.conf import settings
from django.core.exceptions import ValidationError

# Plain ASCII decimal notation only: Decimal() itself also takes "NaN", "inf", "1_000" and
# non-ASCII digits, none of which anyone means as an amount.
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_NOT_FINITE = {"nan", "snan", "inf", "infinity"}
_LONGEST = 64  # characters: far past any real amount, short enough to parse at no cost


CENT = Decimal("0.01")
ZERO = Decimal("0")


def cents(value: Decimal) -> Decimal:
    """Rounded to the cent, half up: how the marketplaces bill, and how every cost is shown."""
    return Decimal(value).quantize(CENT, rounding=ROUND_HALF_UP)


class AmountRefused(ValidationError):
    """An amount that was refused; ``field`` names the input it came from ("reward" …)."""

    def __init__(self, message: str, *, field: str):
        super().__init__(message, code="amount")
        self.field = field


class MoneyField:
    """One kind of amount: its name in messages, the setting holding its maximum, the decimal
    places (and digits, when it is stored) of its column, and whether zero is allowed."""

    def __init__(self, label: str, *, limit_setting: str, places: int | None = None,
                 digits: int | None = None, column: tuple[type, str] | None = None,
                 positive: bool = False, field: str = ""):
        self.label = label
        self.field = field or (column[1] if column else label)
        self.limit_setting = limit_setting
        self._places, self._digits, self._column = places, digits, column
        self.positive = positive

    @classmethod
    def of_column(cls, model: type, name: str, label: str, *, limit_setting: str,
                  positive: bool = False) -> "MoneyField":
        """The rule of a model's DecimalField: its places and digits are read from the field
        (lazily, so a module may declare this before the app registry is ready)."""
        return cls(label, limit_setting=limit_setting, column=(model, name), positive=positive)

    def _shape(self) -> tuple[int, int | None]:
        if self._column is not None:
            model, name = self._column
            field = model._meta.get_field(name)
            return field.decimal_places, field.max_digits
        return self._places or 0, self._digits

    def maximum(self) -> tuple[Decimal, str]:
        """The largest amount allowed, and where that bound comes from."""
        places, digits = self._shape()
        bound, source = _setting_decimal(self.limit_setting), self.limit_setting
        if digits is not None:
            column = Decimal(10) ** (digits - places) - Decimal(1).scaleb(-places)
            if column < bound:
                bound, source = column, f"what the column stores, {digits} digits"
        return bound, source

    def parse(self, value, *, optional: bool = False) -> Decimal | None:
        """``value`` as a Decimal with exactly the column's places, or ``ValidationError``.

        Accepted: Decimal, int, float and str in plain decimal notation (surrounding spaces
        ignored). ``None`` or "" is refused unless ``optional`` (then it gives ``None``)."""
        if value is None or (isinstance(value, str) and not value.strip()):
            if optional:
                return None
            raise self._refuse("is required")
        number = self._number(value)
        if number == 0:
            number = Decimal(0)  # "-0" and "0E+7" are zero
        if number < 0 or (self.positive and number == 0):
            raise self._refuse("must be positive" if self.positive else "must not be negative",
                               value)
        bound, source = self.maximum()
        places, _ = self._shape()
        if number > bound:
            shown = bound.quantize(Decimal(1).scaleb(-min(places, 2)))
            raise self._refuse(f"must be at most {shown} ({source})", value)
        step = Decimal(1).scaleb(-places)
        with localcontext() as ctx:
            ctx.prec = max(28, number.adjusted() + places + 2)
            exact = number.quantize(step, rounding=ROUND_HALF_UP)
        if exact != number:
            raise self._refuse(f"has more than {places} decimal places", value)
        return exact

    def _number(self, value) -> Decimal:
        if isinstance(value, bool) or not isinstance(value, Decimal | int | float | str):
            raise self._refuse(f"must be a number, not {type(value).__name__}")
        if isinstance(value, float):
            value = repr(value)  # the shortest text of the float: 0.1, not 0.1000000000000000055…
        if isinstance(value, str):
            text = value.strip()
            if text.lstrip("+-").lower() in _NOT_FINITE:
                raise self._refuse("must be a finite number", value)
            if len(text) > _LONGEST or not _NUMBER.fullmatch(text):
                raise self._refuse("is not a number", value)
            value = text
        number = Decimal(value)
        if not number.is_finite():
            raise self._refuse("must be a finite number", value)
        return number

    def _refuse(self, why: str, value=None) -> AmountRefused:
        shown = "" if value is None else f"; got {_shown(value)}"
        return AmountRefused(f"The {self.label} {why}{shown}.", field=self.field)


def _shown(value) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else text[:37] + "…"


def _setting_decimal(name: str) -> Decimal:
    raw = getattr(settings, name)
    bound = Decimal(repr(raw) if isinstance(raw, float) else raw)
    if not bound.is_finite() or bound < 0:
        raise ValidationError(f"The setting {name}={raw!r} is not a usable bound.")
    return bound
