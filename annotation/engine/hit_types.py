"""A HIT type declares its page, its answer form, how a payload is checked and shown, and a
version string stored on every assignment (so an answer is always read with the form that
produced it)."""
from __future__ import annotations

from typing import Any, ClassVar

from django import forms
from django.core.exceptions import ValidationError


class HitType:
    slug: ClassVar[str]
    version: ClassVar[str]
    title: ClassVar[str]
    template: ClassVar[str]
    answer_form: ClassVar[type[forms.Form]]
    payload_form: ClassVar[type[forms.Form] | None] = None
    #: (key, what it does) pairs listed on the page; the page's JS binds them.
    shortcuts: ClassVar[list[tuple[str, str]]] = []
    #: Valid upload rows (what a sample file for this type holds; JSON values as Python).
    example_rows: ClassVar[list[dict[str, Any]]] = []

    def clean_payload(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Validate one task's payload (a CSV/JSONL row); raise ValidationError if bad."""
        if self.payload_form is None:
            return payload
        form = self.payload_form(data=payload)
        if not form.is_valid():
            raise ValidationError(_flatten(form.errors))
        return {k: v for k, v in form.cleaned_data.items() if v not in (None, "")}

    def prepare_rows(self, rows: list[tuple[dict[str, Any], Any]], *, seed: int | str
                     ) -> list[tuple[dict[str, Any], Any]]:
        """Turn a whole upload's cleaned ``(payload, gold)`` rows into what its tasks store.

        Runs inside the batch's transaction, after every row passed ``clean_payload`` and
        ``clean_gold``: a rating type stores inline texts as the objects its stored payloads
        name, so votes on them are recorded like any other. ``seed`` makes any random choice
        (which side a response is shown on) reproducible for the batch. Raise ValidationError
        whose message starts with the row ("Row 3: …"); nothing is written then. The default
        keeps the rows as they are."""
        return rows

    def clean_answer(self, data: Any, *, task) -> dict[str, Any]:
        """Validate a worker's answer; returns the structured answer to store."""
        form = self.answer_form(data=data)
        if not form.is_valid():
            raise ValidationError(_flatten(form.errors))
        return dict(form.cleaned_data)

    def page_context(self, task) -> dict[str, Any]:
        """What the template needs to show this task."""
        return {"payload": task.payload}

    def clean_gold(self, gold: Any) -> Any:
        """Check a gold answer at upload (raise ValidationError), so ``is_correct`` can rely on
        its shape; the default accepts any JSON value."""
        return gold

    def is_correct(self, answer: dict[str, Any], gold: Any) -> bool:
        """Gold check; the default compares every key of the gold answer."""
        if isinstance(gold, dict):
            return all(answer.get(k) == v for k, v in gold.items())
        return answer == gold

    def on_submitted(self, assignment) -> None:
        """Hook run inside the submit transaction (e.g. record a judgment)."""

    def on_review_changed(self, assignment, *, rejected: bool) -> None:
        """Hook run inside the transaction that rejects the assignment (``rejected``) or
        reverses its rejection: whatever the work produced leaves every count, or comes back
        (a rating HIT marks its votes, ``judging.services.judgments.rejection``)."""


def _flatten(errors) -> str:
    parts = []
    for field, messages in errors.items():
        label = "" if field == "__all__" else f"{field}: "
        parts.append(label + "; ".join(str(m) for m in messages))
    return " | ".join(parts)


_REGISTRY: dict[str, HitType] = {}


def register(cls: type[HitType]) -> type[HitType]:
    """Class decorator adding a HIT type to the registry (one instance per slug)."""
    if cls.slug in _REGISTRY and type(_REGISTRY[cls.slug]) is not cls:
        raise RuntimeError(f"HIT type {cls.slug!r} registered twice")
    _REGISTRY[cls.slug] = cls()
    return cls


def get_hit_type(slug: str) -> HitType:
    try:
        return _REGISTRY[slug]
    except KeyError:
        raise LookupError(f"Unknown HIT type {slug!r}; known: {sorted(_REGISTRY)}") from None


def all_hit_types() -> list[HitType]:
    return sorted(_REGISTRY.values(), key=lambda h: h.slug)
