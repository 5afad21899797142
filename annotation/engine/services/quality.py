"""Quality signals at submit: the page's telemetry, checked, and the flags an owner reviews.

Telemetry comes from the worker's browser (``static/js/hit.js`` posts it as ``_telemetry``;
an API client may send ``telemetry``), so it is untrusted: only known keys holding
non-negative whole numbers within a bound are kept, anything else is dropped, and a bad value
never refuses an answer.

Flags never refuse or reject anything; they are shown where the owner decides (the batch
review page, the worker page) and exported with the results:

* ``too_fast`` — seconds spent below ``FLAG_FAST_SHARE`` × the median of the batch's counted
  answers (the latest ``MEDIAN_WINDOW``), once ``FLAG_MIN_SAMPLES`` of them exist. The answers
  submitted before that (the batch's first ones) are checked again by every submit while the
  batch has fewer than 2 × ``FLAG_MIN_SAMPLES`` counted answers, against the median of then.
* ``paste_heavy`` — a free-text answer whose pasted characters are at least
  ``FLAG_PASTE_SHARE`` of its text.
* ``near_duplicate`` — free text whose shingle similarity (``annotation.core.shingles``)
  reaches ``FLAG_DUPLICATE_SIMILARITY`` against another worker's answer in the batch (the
  latest ``FLAG_DUPLICATE_CANDIDATES``) or a text the HIT type names (``similar_texts``: the
  LLM candidate reference, models' responses). The later answer carries the flag.
"""
from __future__ import annotations

import json
import statistics
from collections.abc import Mapping
from typing import Any

from django.conf import settings

from annotation.core.shingles import most_similar
from annotation.models import Assignment

TELEMETRY_FIELD = "_telemetry"  # the form field the page posts
# key → the largest value kept (a week of active time; generous counts)
TELEMETRY_BOUNDS = {"active_ms": 7 * 24 * 3600 * 1000, "blurs": 100_000, "pastes": 100_000,
                    "pasted_chars": 10_000_000, "keystrokes": 10_000_000}
_RAW_MAX = 2000  # characters of posted telemetry JSON worth parsing
MEDIAN_WINDOW = 1000  # latest counted answers the batch's median is taken over
FLAG_CODES = ("too_fast", "paste_heavy", "near_duplicate")


def telemetry_split(data: Any) -> tuple[Any, Any]:
    """(``data`` without the page's telemetry field, the field's raw value or None): the
    HIT's answer form never sees it, and it is never stored as part of the answer."""
    if not isinstance(data, Mapping) or TELEMETRY_FIELD not in data:
        return data, None
    raw = data.get(TELEMETRY_FIELD)
    data = data.copy()
    data.pop(TELEMETRY_FIELD)
    return data, raw


def telemetry_clean(raw: Any) -> dict[str, int]:
    """The known keys of ``raw`` (a JSON object, or its text) whose values are whole numbers
    in ``0..bound``; everything else is ignored."""
    if isinstance(raw, str):
        if len(raw) > _RAW_MAX:
            return {}
        try:
            raw = json.loads(raw)
        except ValueError:
            return {}
    if not isinstance(raw, Mapping):
        return {}
    kept = {}
    for key, bound in TELEMETRY_BOUNDS.items():
        value = raw.get(key)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= bound:
            kept[key] = value
    return kept


def submit_flags(*, assignment: Assignment, hit, answer: dict, telemetry: dict[str, int],
                 spent: float) -> list[dict[str, str]]:
    """The flags of an answer being submitted (run inside the submit transaction; the
    assignment is still its lease, so it is not among the batch's counted answers)."""
    flags = []
    median, samples = _batch_median(assignment.batch_id, exclude=assignment.pk)
    if median is not None and (flag := _too_fast(spent, median)):
        flags.append(flag)
    text = hit.free_text(answer)
    if text:
        pasted = telemetry.get("pasted_chars", 0)
        if telemetry.get("pastes") and pasted >= settings.FLAG_PASTE_SHARE * len(text):
            flags.append({"code": "paste_heavy",
                          "detail": f"{pasted} characters pasted, answer has {len(text)}"})
        if flag := _near_duplicate(assignment, hit, text):
            flags.append(flag)
    if median is not None and samples < 2 * settings.FLAG_MIN_SAMPLES:
        _recheck_first_answers(assignment.batch_id, median)
    return flags


def _too_fast(seconds: float, median: float) -> dict[str, str] | None:
    if seconds < settings.FLAG_FAST_SHARE * median:
        return {"code": "too_fast",
                "detail": f"{seconds:.1f} s against the batch's median of {median:.1f} s"}
    return None


def _counted(batch_id: int):
    return Assignment.objects.filter(batch_id=batch_id, counted=True,
                                     seconds_spent__isnull=False)


def _batch_median(batch_id: int, *, exclude: int) -> tuple[float | None, int]:
    """(median seconds of the batch's latest counted answers or None below
    ``FLAG_MIN_SAMPLES``, how many there are)."""
    seconds = list(_counted(batch_id).exclude(pk=exclude).order_by("-submitted_at", "-pk")
                   .values_list("seconds_spent", flat=True)[:MEDIAN_WINDOW])
    if len(seconds) < settings.FLAG_MIN_SAMPLES:
        return None, len(seconds)
    return statistics.median(seconds), len(seconds)


def _recheck_first_answers(batch_id: int, median: float) -> None:
    """The batch's first ``FLAG_MIN_SAMPLES`` answers came before any median: set their
    ``too_fast`` flag against this one (at most that many rows)."""
    first = (_counted(batch_id).order_by("submitted_at", "pk")
             .values_list("pk", "seconds_spent", "flags")[:settings.FLAG_MIN_SAMPLES])
    for pk, seconds, flags in first:
        kept = [f for f in flags or [] if f.get("code") != "too_fast"]
        if flag := _too_fast(seconds, median):
            kept.append(flag)
        if kept != (flags or []):
            Assignment.objects.filter(pk=pk).update(flags=kept)


def _near_duplicate(assignment: Assignment, hit, text: str) -> dict[str, str] | None:
    others = (Assignment.objects.filter(batch_id=assignment.batch_id, answer__isnull=False)
              .exclude(worker_id=assignment.worker_id).order_by("-submitted_at", "-pk")
              .values_list("answer", flat=True)[:settings.FLAG_DUPLICATE_CANDIDATES])
    peers = [hit.free_text(answer) for answer in others]
    shown = hit.similar_texts(assignment.task)
    score, where = most_similar(text, [*peers, *shown])
    if where is None or score < settings.FLAG_DUPLICATE_SIMILARITY:
        return None
    source = ("another worker's answer in this batch" if where < len(peers)
              else "a text the task shows or the study holds (reference or model response)")
    return {"code": "near_duplicate", "detail": f"similarity {score:.2f} with {source}"}

