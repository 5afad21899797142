"""Environment readers that fail loudly on bad values (healthchecks' envbool idea)."""
import os
from decimal import Decimal, InvalidOperation

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false)")


def _env_number(name: str, default, convert, what: str):
    """``convert`` of the variable's value, ``default`` when unset or empty."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return convert(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not {what}") from exc


def env_int(name: str, default: int) -> int:
    return _env_number(name, default, int, "an integer")


def env_float(name: str, default: float) -> float:
    return _env_number(name, default, float, "a number")


def env_decimal(name: str, default: str) -> Decimal:
    """A finite, non-negative amount (a money bound): "NaN", "inf" or "-1" fail at startup."""
    raw = os.environ.get(name)
    text = default if raw is None or raw.strip() == "" else raw.strip()
    try:
        value = Decimal(text)
    except InvalidOperation as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from exc
    if not value.is_finite() or value < 0:
        raise ImproperlyConfigured(f"{name}={raw!r} must be a finite amount, zero or more")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]
