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
    #: How long a careful worker takes on one task (seconds): a batch's minimum time
    #: defaults to a share of it (``settings.MIN_SECONDS_SHARE``), and pay per hour is
    #: estimated from it until real times are known.
    expected_seconds: ClassVar[int] = 60
    #: The per-batch settings this type offers, as a form whose initial values are the
    #: defaults (stored on ``Batch.hit_options``); None: the type has none.
    options_form: ClassVar[type[forms.Form] | None] = None
    #: The answer's fields a worker writes freely (a caption, an instruction, feedback): their
    #: text is checked for pasting and near-duplicates at submit. Empty: no free text.
    free_text_fields: ClassVar[tuple[str, ...]] = ()
    #: True when the page needs a large screen (several images or turns side by side): a
    #: marketplace that asks for devices offers the task on desktops only.
    desktop_only: ClassVar[bool] = False
    #: The ``input.*`` columns a results export gives this type's tasks (name → kind:
    #: ``text``, ``int``, ``float``), filled by ``export_inputs``. The default: the payload as
    #: stored, one JSON cell.
    export_columns: ClassVar[dict[str, str]] = {"payload": "text"}

    def clean_options(self, options: Any) -> dict[str, Any]:
        """A batch's HIT options checked and completed with the defaults (raise
        ValidationError naming the option). Unknown names are refused, not ignored: a typo
        must not silently give the default protocol."""
        if options in (None, ""):
            options = {}
        if not isinstance(options, dict):
            raise ValidationError("HIT options must be a JSON object")
        fields = self.options_form.base_fields if self.options_form else {}
        unknown = sorted(set(options) - set(fields))
        if unknown:
            offered = ", ".join(fields) or "none"
            raise ValidationError(f"HIT option(s) {', '.join(unknown)} not offered by "
                                  f"{self.slug} (offered: {offered})")
        if self.options_form is None:
            return {}
        data = {name: field.initial for name, field in fields.items()}
        data.update({k: ("on" if v is True else "" if v is False else v)
                     for k, v in options.items()})
        form = self.options_form(data=data)
        if not form.is_valid():
            raise ValidationError(f"HIT options: {_flatten(form.errors)}")
        return dict(form.cleaned_data)

    def default_min_seconds(self) -> int:
        """A new batch's minimum seconds per task unless the upload says otherwise: answers
        faster than this are refused (a click-through guard), so it is a fraction of the time
        the task needs, never 0 by accident."""
        from django.conf import settings

        return max(1, round(self.expected_seconds * settings.MIN_SECONDS_SHARE))

    def options_of(self, batch) -> dict[str, Any]:
        """``batch``'s options with the defaults for any it does not name (batches made
        before an option existed keep the protocol they had)."""
        return self.clean_options(batch.hit_options or {})

    def clean_payload(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Validate one task's payload (a CSV/JSONL row); raise ValidationError if bad."""
        if self.payload_form is None:
            return payload
        form = self.payload_form(data=payload)
        if not form.is_valid():
            raise ValidationError(_flatten(form.errors))
        return {k: v for k, v in form.cleaned_data.items() if v not in (None, "")}

    def prepare_rows(self, rows: list[tuple[dict[str, Any], Any]], *, seed: int | str,
                     study=None) -> list[tuple[dict[str, Any], Any]]:
        """Turn a whole upload's cleaned ``(payload, gold)`` rows into what its tasks store.

        Runs inside the batch's transaction, after every row passed ``clean_payload`` and
        ``clean_gold``: a rating type stores inline texts as the objects its stored payloads
        name, so votes on them are recorded like any other. ``seed`` makes any random choice
        (which side a response is shown on) reproducible for the batch; what a type creates
        belongs to ``study`` (the batch's study id). Raise ValidationError
        whose message starts with the row ("Row 3: …"); nothing is written then. The default
        keeps the rows as they are."""
        return rows

    def clean_answer(self, data: Any, *, task) -> dict[str, Any]:
        """Validate a worker's answer; returns the structured answer to store."""
        form = self.answer_form(data=data)
        if not form.is_valid():
            raise ValidationError(answer_errors(form))
        return dict(form.cleaned_data)

    def page_context(self, task) -> dict[str, Any]:
        """What the template needs to show this task."""
        return {"payload": task.payload}

    def clean_gold(self, gold: Any) -> Any:
        """Check a gold answer at upload (raise ValidationError), so ``is_correct`` can rely on
        its shape; the default accepts any JSON value."""
        return gold

    def options_for_answers(self, answers: list) -> dict[str, Any]:
        """The batch options that offer exactly ``answers`` (a study's allowed answers, given
        to its new batches that name none); raise ValidationError when no option set does.
        Default: the type asks for no choice, so there is nothing to apply."""
        return {}

    def check_gold_offered(self, gold: Any, options: dict[str, Any]) -> None:
        """Refuse (ValidationError) a gold answer the batch's options do not offer (a "tie"
        in a forced-choice batch): no worker could ever match it. Default: any."""

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

    def export_inputs(self, tasks: list) -> dict[int, dict[str, Any]]:
        """What each task showed its worker, ``{task.pk: {column: value}}`` over
        ``export_columns`` (a missing column is empty), for the results export's ``input.*``
        columns (MTurk's ``Input.*``). Called once per chunk of tasks: a type whose payload
        names stored objects fetches them for the whole chunk in a few queries, never one
        task at a time."""
        return {task.pk: {"payload": task.payload} for task in tasks}

    def free_text(self, answer: dict[str, Any] | None) -> str:
        """The answer's free text (``free_text_fields``; a list field's strings joined)."""
        parts: list[str] = []
        for name in self.free_text_fields:
            value = (answer or {}).get(name)
            values = value if isinstance(value, list) else [value]
            parts.extend(v for v in values if isinstance(v, str) and v)
        return "\n".join(parts)

    def similar_texts(self, task) -> list[str]:
        """Texts a free-text answer to ``task`` must not copy: what the page shows or the study
        holds (an LLM's candidate reference, models' responses). The default: none."""
        return []


def answer_errors(form: forms.Form) -> str:
    """A worker's form errors named by the fields' labels, as the page captions them ("Your
    feedback: Ensure …"), never by the field's name; errors of no field stand alone."""
    parts = []
    for field, messages in form.errors.items():
        label = "" if field not in form.fields else f"{form[field].label}: "
        parts.append(label + "; ".join(str(m) for m in messages))
    return " | ".join(parts)


def _flatten(errors) -> str:
    """Upload and option errors, named by the column an admin wrote (``response_a``)."""
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
