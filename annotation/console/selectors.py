"""What the admin's batch pages read: a batch's summary (progress with an ETA, spend with
fees, a status that says "finished" when every answer is in, its HIT type and options by their
human names) and the review page's filters. Reads only; every write is a service."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Q, QuerySet

from annotation.engine.hit_types import HitType, get_hit_type
from annotation.engine.selectors import BatchOverview, assignments_flagged, batches_overview
from annotation.models import Assignment, Batch

ETA_SAMPLE = 50  # the ETA reads the pace of the batch's latest submissions, no more
DONE = (Assignment.Status.SUBMITTED, Assignment.Status.APPROVED, Assignment.Status.REJECTED)


@dataclass(frozen=True)
class BatchSummary:
    row: BatchOverview
    hit: HitType
    status: str  # what the pill says
    status_class: str
    eta: str  # "about 2 h 10 min", "" when unknown or done
    options: list[tuple[str, str]]  # (option, value) in words


def hit_title(slug: str) -> str:
    try:
        return get_hit_type(slug).title
    except LookupError:
        return slug


def batch_summaries(batches, *, with_eta: bool = False) -> list[BatchSummary]:
    out = []
    for row in batches_overview(batches):
        batch = row.batch
        hit = get_hit_type(batch.hit_type)
        status, css = status_words(batch, row.progress.percent)
        eta = batch_eta(batch, row.progress.remaining) if with_eta and css == "active" else ""
        out.append(BatchSummary(row=row, hit=hit, status=status, status_class=css, eta=eta,
                                options=option_words(hit, batch)))
    return out


def status_words(batch: Batch, percent: float) -> tuple[str, str]:
    """(label, css class): an active batch whose every slot is answered says so."""
    if batch.status == Batch.Status.ACTIVE and percent >= 100:
        return "Finished: every answer is in", "finished"
    return batch.get_status_display(), batch.status


def option_words(hit: HitType, batch: Batch) -> list[tuple[str, str]]:
    """The batch's HIT options as (what, value) in the options form's own words."""
    if hit.options_form is None:
        return []
    try:
        values = hit.options_of(batch)
    except ValidationError:  # options stored before a form change: show them as stored
        values = batch.hit_options or {}
    words = []
    for name, form_field in hit.options_form.base_fields.items():
        value = values.get(name)
        choices = dict((str(k), str(v)) for k, v in getattr(form_field, "choices", ()))
        shown = ("yes" if value else "no") if isinstance(value, bool) else choices.get(
            str(value), str(value))
        label = str(form_field.label or name.replace("_", " ").capitalize())
        words.append((label, shown))
    return words


def batch_eta(batch: Batch, remaining: int) -> str:
    """How long the remaining slots take at the pace of the latest submissions."""
    times = list(Assignment.objects.filter(batch=batch, status__in=DONE,
                                           submitted_at__isnull=False)
                 .order_by("-submitted_at").values_list("submitted_at", flat=True)[:ETA_SAMPLE])
    seconds = eta_seconds([t.timestamp() for t in times], remaining)
    if seconds is None:
        return "not enough answers yet to tell"
    return f"about {duration_words(seconds)} (at the pace of the last {len(times)} answers)"


def eta_seconds(times: list[float], remaining: int) -> float | None:
    """Seconds until ``remaining`` more answers arrive at the pace of ``times`` (epoch
    seconds of recent submissions); None with fewer than two or no time between them."""
    if remaining <= 0:
        return 0.0
    if len(times) < 2:
        return None
    span = max(times) - min(times)
    if span <= 0:
        return None
    return remaining * span / (len(times) - 1)


def duration_words(seconds: float) -> str:
    minutes = max(1, round(seconds / 60))
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{round(hours / 24)} days"


# --- review -----------------------------------------------------------------------------------

STATUSES = {"submitted": "awaiting review", "rejected": "rejected", "approved": "approved"}
FLAGS = {"": "any or none", "any": "flagged", "too_fast": "too fast",
         "paste_heavy": "paste-heavy", "near_duplicate": "near-duplicate"}
GOLD = {"": "all tasks", "gold": "gold tasks", "wrong": "gold answered wrong",
        "right": "gold answered right", "plain": "ordinary tasks"}
ANSWER_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,40}")
ANSWER_SAMPLE = 2000  # answers read to list the values the answer filter offers
ANSWER_VALUES_MAX = 40


@dataclass
class ReviewFilter:
    status: str = "submitted"
    worker: str = ""
    answer: str = ""  # "key:value", one of ``answer_values``
    min_seconds: float | None = None
    max_seconds: float | None = None
    gold: str = ""
    flag: str = ""
    answer_values: dict[str, tuple[str, Any]] = field(default_factory=dict)

    def query(self) -> dict[str, str]:
        """The filter as query parameters (what every link and the pager keep)."""
        pairs = {"status": self.status, "worker": self.worker, "answer": self.answer,
                 "min_seconds": _number_text(self.min_seconds),
                 "max_seconds": _number_text(self.max_seconds), "gold": self.gold,
                 "flag": self.flag}
        return {k: v for k, v in pairs.items() if v}


def review_filter(batch: Batch, params) -> ReviewFilter:
    """The filter a query string asks for; unknown or malformed values fall back to "all"."""
    values = answer_values(batch)
    return ReviewFilter(
        status=_one_of(params.get("status"), STATUSES, "submitted"),
        worker=(params.get("worker") or "").replace("\x00", "").strip()[:128],
        answer=_one_of(params.get("answer"), values, ""),
        min_seconds=_seconds(params.get("min_seconds")),
        max_seconds=_seconds(params.get("max_seconds")),
        gold=_one_of(params.get("gold"), GOLD, ""),
        flag=_one_of(params.get("flag"), FLAGS, ""),
        answer_values=values,
    )


def review_rows(batch: Batch, f: ReviewFilter) -> QuerySet:
    """The batch's assignments the filter lists, oldest submission first."""
    rows = Assignment.objects.filter(batch=batch, status=f.status)
    if f.worker:
        rows = rows.filter(Q(worker__external_id__icontains=f.worker)
                           | Q(worker__user__username__icontains=f.worker))
    if f.answer:
        key, value = f.answer_values[f.answer]
        rows = rows.filter(**{f"answer__{key}": value})
    if f.min_seconds is not None:
        rows = rows.filter(seconds_spent__gte=f.min_seconds)
    if f.max_seconds is not None:
        rows = rows.filter(seconds_spent__lte=f.max_seconds)
    rows = {"": rows, "gold": rows.filter(task__is_gold=True),
            "wrong": rows.filter(gold_correct=False), "right": rows.filter(gold_correct=True),
            "plain": rows.filter(task__is_gold=False)}[f.gold]
    rows = assignments_flagged(rows, f.flag)
    return rows.select_related("task__batch", "worker__user").order_by("submitted_at", "pk")


def task_view(hit: HitType, task) -> dict[str, Any]:
    """What the worker saw (the HIT type's own page context: instruction, images, responses,
    turns …), for the review page to show beside the answer."""
    try:
        return hit.page_context(task)
    except Exception as exc:  # a payload whose stored objects are gone: say so, show the rest
        return {"missing": f"The task's content cannot be shown ({type(exc).__name__})."}


def answer_words(hit: HitType, answer) -> list[tuple[str, str]]:
    """The answer as (field, value) in words: a choice's own label where its form has one."""
    if not isinstance(answer, dict):
        return [] if answer is None else [("answer", str(answer))]
    form = getattr(hit, "answer_form", None)
    fields = form.base_fields if form is not None else {}
    words = []
    for key, value in answer.items():
        form_field = fields.get(key)
        label = str(getattr(form_field, "label", None) or key.replace("_", " ").capitalize())
        choices = {str(k): str(v) for k, v in getattr(form_field, "choices", ())}
        words.append((label, choices.get(str(value), str(value)) if value != "" else "—"))
    return words


def answer_values(batch: Batch) -> dict[str, tuple[str, Any]]:
    """{"key:value": (key, value)} for the short answer values this batch's answers hold
    (a choice, a score, yes / no): what the answer filter offers, whatever the HIT type."""
    found: dict[str, tuple[str, Any]] = {}
    answers = (Assignment.objects.filter(batch=batch, status__in=DONE, answer__isnull=False)
               .order_by("-pk").values_list("answer", flat=True)[:ANSWER_SAMPLE])
    for answer in answers:
        for key, value in (answer or {}).items() if isinstance(answer, dict) else ():
            short = isinstance(value, int | str) and not isinstance(value, bool) and (
                not isinstance(value, str) or 0 < len(value) <= 20)
            if short and ANSWER_KEY.fullmatch(key) and len(found) < ANSWER_VALUES_MAX:
                found.setdefault(f"{key}:{value}", (key, value))
    return dict(sorted(found.items()))


def _one_of(value, allowed, default: str) -> str:
    return value if isinstance(value, str) and value in allowed else default


def _seconds(value) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if 0 <= number <= 10 ** 7 else None


def _number_text(value: float | None) -> str:
    return "" if value is None else f"{value:g}"
