"""What the batch upload page tells an admin: the columns each HIT type takes, a sample file
per type, and whether the batch fits its budget.

Columns and samples are derived from the HIT type itself — the columns from the fields of its
``payload_form`` (the form every uploaded row is validated with), the samples from its
``example_rows`` — so the page cannot drift from what the upload accepts.

The budget is checked at upload and the upload is *refused* (not warned about) when the
batch's full cost estimate — every slot paid, the marketplace's fees included — passes it, or
when a paid marketplace is chosen without one: the same rule the launch enforces
(``annotation.providers.costs.budget_check``), told before anything is created rather than
at the launch.
"""
from __future__ import annotations

import io
import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django import forms

from annotation.core.csv_safety import SafeDictWriter
from annotation.core.marketplaces import get_provider
from annotation.engine.hit_types import HitType

SAMPLE_FORMATS = ("csv", "jsonl")
GOLD_COLUMN = "_gold_answer"


@dataclass(frozen=True)
class Column:
    name: str
    required: bool
    kind: str
    help: str
    aliases: tuple[str, ...] = ()  # other spellings read as this column (released files')


def payload_columns(hit: HitType) -> list[Column]:
    """One entry per payload field, in the form's order, then the optional gold column."""
    columns = []
    # Only the rating types declare aliases ({their column: ours}); the base type has none.
    aliases = getattr(hit, "aliases", {})
    if hit.payload_form is not None:
        columns = [Column(name, field.required, _kind(field), str(field.help_text or ""),
                          tuple(theirs for theirs, ours in aliases.items() if ours == name))
                   for name, field in hit.payload_form.base_fields.items()]
    columns.append(Column(GOLD_COLUMN, False, "JSON",
                          "Marks the row as a gold (attention-check) task with this known "
                          "answer; leave empty for ordinary tasks."))
    return columns


@dataclass(frozen=True)
class Option:
    """One per-batch HIT option as the upload page lists it."""

    name: str
    default: str  # as JSON: "ab", false
    values: tuple[tuple[str, str], ...]  # (value, meaning); empty for a yes/no option
    help: str


def hit_options(hit: HitType) -> list[Option]:
    """The options a batch of this type may set (``HitType.options_form``), with defaults."""
    if hit.options_form is None:
        return []
    return [Option(name, json.dumps(field.initial),
                   tuple((str(v), str(label)) for v, label in getattr(field, "choices", ())),
                   str(field.help_text or ""))
            for name, field in hit.options_form.base_fields.items()]


def payload_rule(hit: HitType) -> str:
    """The payload form's own docstring: it states the rules the fields alone cannot (e.g.
    "a stored comparison, or the texts inline")."""
    form = hit.payload_form
    if form is None:
        return "Any columns; each row is stored as given."
    doc = (form.__dict__.get("__doc__") or "").replace("``", "")  # reST literals, as plain text
    return " ".join(doc.split())


def example_rows(hit: HitType) -> list[dict[str, Any]]:
    return list(hit.example_rows)


def sample_file(hit: HitType, fmt: str) -> tuple[str, bytes]:
    """(file name, bytes) of the HIT type's example rows as ``fmt`` ("csv" or "jsonl").

    CSV cells holding lists or objects are written as JSON (what the upload parses them
    from); every cell goes through the spreadsheet-formula escape our importers undo."""
    rows = example_rows(hit)
    if not rows:
        raise LookupError(f"HIT type {hit.slug!r} has no example rows")
    if fmt == "jsonl":
        body = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    elif fmt == "csv":
        names = list(dict.fromkeys(key for row in rows for key in row))
        out = io.StringIO()
        writer = SafeDictWriter(out, names)
        writer.writeheader()
        writer.writerows({k: _cell(v) for k, v in row.items()} for row in rows)
        body = out.getvalue()
    else:
        raise LookupError(f"unknown sample format {fmt!r}; use one of {SAMPLE_FORMATS}")
    return f"{hit.slug}-sample.{fmt}", body.encode("utf-8")


def _cell(value: Any) -> Any:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else value


def _kind(field: forms.Field) -> str:
    """A field's type in words; subclasses before their bases (a UUID field is a CharField)."""
    if isinstance(field, forms.JSONField):
        return "JSON"
    if isinstance(field, forms.UUIDField):
        return "id (UUID)"
    if isinstance(field, forms.URLField):
        return "URL"
    if isinstance(field, forms.BooleanField):
        return "true / false"
    if isinstance(field, forms.DecimalField | forms.FloatField):  # both IntegerField's
        return "number"
    if isinstance(field, forms.IntegerField):
        return "whole number"
    if isinstance(field, forms.ChoiceField):
        return "one of: " + ", ".join(str(value) for value, _ in field.choices if value != "")
    if isinstance(field, forms.CharField):
        limit = f", up to {field.max_length:,} characters" if field.max_length else ""
        return "text" + limit
    return type(field).__name__.removesuffix("Field").lower() or "text"


def upload_estimate(*, provider: str, reward: Decimal, tasks: int, n: int):
    """Full cost of a new batch of ``tasks`` tasks with ``n`` assignments each on ``provider``."""
    return get_provider(provider).estimate(reward=reward, assignments=tasks * n,
                                           assignments_per_hit=n)


def budget_problem(*, provider: str, budget: Decimal | None, reward: Decimal, tasks: int,
                   n: int) -> str | None:
    """Why a new batch may not be created with this budget (None: it may)."""
    cost = upload_estimate(provider=provider, reward=reward, tasks=tasks, n=n)
    if budget is None:
        if get_provider(provider).paid:
            return (f"A paid marketplace needs a budget: this batch's estimate is "
                    f"${cost.total:.2f} ({tasks} tasks × {n} assignments × ${reward:.2f}, "
                    f"plus ${cost.reward_fees:.2f} fees).")
        return None
    if cost.total > budget:
        return (f"The estimate ${cost.total:.2f} ({tasks} tasks × {n} assignments × "
                f"${reward:.2f}, plus ${cost.reward_fees:.2f} fees) is over the budget of "
                f"${budget:.2f}: raise the budget, or lower N or the reward.")
    return None
