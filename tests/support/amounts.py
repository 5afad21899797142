"""What a money entry point may be sent, for the amount property tests (issue #26, item 4).

``ANY_AMOUNT`` is everything an outside caller can put in a form, a CSV cell, JSON or a
command line: decimals of every size and exponent (NaN, sNaN, ±Infinity included), floats,
integers, text that looks like a number and text that does not, ``None`` and booleans.
``valid_amounts`` draws only amounts an entry point must accept.

``check_outcome`` is the property: the call either raised ``ValidationError`` with a message
naming the amount, and wrote nothing; or it stored exactly the number that was sent.
"""
from decimal import Decimal

from django.core.exceptions import ValidationError
from hypothesis import HealthCheck
from hypothesis import settings as hsettings
from hypothesis import strategies as st

PROPERTY = hsettings(max_examples=60, deadline=None, derandomize=True, database=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture,
                                            HealthCheck.too_slow])

# Text a person or a spreadsheet might send, and text that only looks like a number.
AMOUNT_TEXTS = ["1e9", "NaN", "nan", "-NaN", "sNaN", "inf", "-inf", "Infinity", "-0", "0",
                "", "   ", "  5 ", "5.", ".5", "0.01", "0.001", "0.10", "100", "100.00",
                "100.01", "1000000", "99999999999", "1e999999", "1E-999999", "-1", "1_000",
                "٣", "１", "$5", "5,00", "0x10", "5e", "e5", "+5", "--5", "5-", "1e+2", "abc",
                "9" * 70, "0." + "0" * 70 + "1"]

ANY_AMOUNT = st.one_of(
    st.sampled_from(AMOUNT_TEXTS),
    st.sampled_from([None, True, False, 1000000, 99999999999, 1e9, float("nan"),
                     float("inf"), float("-inf"), -0.0, Decimal("NaN"), Decimal("sNaN"),
                     Decimal("-Infinity"), [], {}, b"5"]),
    st.decimals(allow_nan=True, allow_infinity=True),
    st.builds(lambda digits, exponent: Decimal(digits).scaleb(exponent),
              st.integers(-10**12, 10**12), st.integers(-60, 60)),  # huge and tiny exponents
    st.decimals(min_value=-20, max_value=150, places=2),
    st.decimals(min_value=-20, max_value=150, places=2).map(str),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-20, max_value=150).map(lambda f: round(f, 2)),
    st.integers(min_value=-10**15, max_value=10**15),
    st.from_regex(r"\A\s?[-+]?[0-9]{0,12}(\.[0-9]{0,8})?([eE][-+]?[0-9]{1,4})?\s?\Z"),
    st.text(max_size=12),
)


def valid_amounts(most: Decimal, *, places: int = 2, positive: bool = False):
    """Amounts that must be accepted, in each form a caller may use."""
    least = Decimal(1).scaleb(-places) if positive else Decimal(0)
    numbers = st.decimals(min_value=least, max_value=most, places=places)
    return st.one_of(numbers, numbers.map(str), numbers.map(lambda d: f"  {d} "))


def as_number(value) -> Decimal:
    """The number a caller meant by an accepted ``value`` (the oracle for what is stored)."""
    if isinstance(value, float):
        return Decimal(repr(value))
    return Decimal(value.strip() if isinstance(value, str) else value)


def check_refusal(exc: ValidationError, label: str) -> None:
    """A refusal's message is one sentence naming the amount, not a Python exception."""
    message = " ".join(exc.messages)
    assert label in message, message
    assert "InvalidOperation" not in message and "decimal." not in message, message
