"""The product's batch upload: one service from the uploaded file to a draft batch.

Checks in the order that costs least: the file's size before a byte of it is parsed
(``BATCH_UPLOAD_MAX_BYTES``), then the rows with ``batch_create_from_rows`` (all or nothing;
gold answers against the choices the batch offers). A file the chosen HIT type refuses is tried
against the other types, so the admin reads "this looks like a <rubric> file" instead of a
missing column. Last, outside any transaction, every image URL is fetched with the SSRF-safe
fetcher and the broken ones are stored on the batch (``Batch.image_problems``) for its page to
list before activation: a broken image is a warning, not a refusal.
"""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.staticfiles import finders
from django.core.exceptions import SuspiciousFileOperation, ValidationError
from django.core.files.storage import default_storage

from annotation.core.image_fetch import ImageFetchError, fetch_image, validate_image_bytes
from annotation.engine import upload_help
from annotation.engine.hit_types import HitType, all_hit_types, get_hit_type
from annotation.engine.services.batches import RowError, batch_create_from_rows, rows_from_upload
from annotation.models import Batch

GUESS_ROWS = 3  # rows another HIT type must accept for the file to "look like" it


class UploadRefused(ValidationError):
    """The upload writes nothing; ``field`` names the form field the message belongs to."""

    def __init__(self, message: str, *, field: str = "file"):
        super().__init__(message)
        self.field = field


def batch_upload(*, file, hit_type: str, provider: str, reward: Decimal,
                 budget: Decimal | None, assignments_per_task: int, **fields: Any) -> Batch:
    """A draft batch from an uploaded file (``name``, ``size``, ``read()``), or
    ``UploadRefused`` / ``AmountRefused`` with nothing written. ``fields``: the rest of
    ``batch_create_from_rows``'s keywords (title, instructions, hit_options …)."""
    hit = get_hit_type(hit_type)
    limit = settings.BATCH_UPLOAD_MAX_BYTES
    if file.size > limit:
        raise UploadRefused(f"The file is {_megabytes(file.size)}; uploads are limited to "
                            f"{_megabytes(limit)} (BATCH_UPLOAD_MAX_BYTES). Split it into "
                            "several batches.")
    try:
        rows = rows_from_upload(file.name, file.read())
    except RowError as exc:
        raise UploadRefused("; ".join(exc.messages)) from exc
    problem = upload_help.budget_problem(provider=provider, budget=budget, reward=reward,
                                         tasks=len(rows), n=assignments_per_task)
    if problem:
        raise UploadRefused(problem, field="budget")
    try:
        batch = batch_create_from_rows(
            hit_type=hit_type, rows=rows, provider=provider, reward=reward, budget=budget,
            assignments_per_task=assignments_per_task, **fields)
    except RowError as exc:
        raise UploadRefused(_explained(exc, hit, rows)) from exc
    batch_check_images(batch)
    return batch


def _explained(exc: RowError, hit: HitType, rows: list[dict]) -> str:
    message = "; ".join(exc.messages)
    other = hit_type_guess(rows, chosen=hit)
    if other is None:
        return message
    return (f"This looks like a “{other.title}” file, not “{hit.title}”: choose that HIT "
            f"type, or fix the columns. ({message})")


def hit_type_guess(rows: list[dict], *, chosen: HitType) -> HitType | None:
    """The HIT type other than ``chosen`` that accepts the file's first rows, the one whose
    columns overlap the rows' most when several do (None: no type does)."""
    sample = rows[:GUESS_ROWS]
    keys = {key for row in sample for key in row}
    fits = []
    for hit in all_hit_types():
        if hit is chosen or hit.payload_form is None:
            continue
        try:
            for row in sample:
                hit.clean_payload({k: v for k, v in row.items()
                                   if k is not None and not k.startswith("_")})
        except (ValidationError, LookupError, ValueError, TypeError):
            continue
        columns = set(hit.payload_form.base_fields) | set(getattr(hit, "aliases", {}))
        fits.append((len(keys & columns), hit.slug, hit))
    return max(fits)[2] if fits else None


# --- images ----------------------------------------------------------------------------------

def batch_check_images(batch: Batch) -> list[dict]:
    """Fetch every distinct image URL of ``batch``'s tasks and store the broken ones on the
    batch (``[{task, url, reason}]``, by task position). Network calls: never inside a
    transaction. URLs past ``UPLOAD_IMAGE_CHECK_MAX`` are reported as not checked."""
    by_url: dict[str, list[int]] = {}
    for position, payload in batch.tasks.order_by("position").values_list("position", "payload"):
        for url in payload_image_urls(payload):
            by_url.setdefault(url, []).append(position)
    urls = list(by_url)
    limit = settings.UPLOAD_IMAGE_CHECK_MAX
    with ThreadPoolExecutor(max_workers=8) as pool:
        reasons = dict(zip(urls[:limit], pool.map(image_problem, urls[:limit]), strict=True))
    reasons.update({url: f"not checked (more than {limit} image URLs)" for url in urls[limit:]})
    problems = [{"task": by_url[url][0], "tasks": len(by_url[url]), "url": url, "reason": reason}
                for url, reason in reasons.items() if reason]
    problems.sort(key=lambda p: (p["task"], p["url"]))
    Batch.objects.filter(pk=batch.pk).update(image_problems=problems)
    batch.image_problems = problems
    return problems


def payload_image_urls(payload: dict) -> list[str]:
    """The image URLs a task payload shows inline (``image_urls``, ``image_url``)."""
    urls = payload.get("image_urls") or []
    if isinstance(urls, str):
        try:
            urls = json.loads(urls)
        except json.JSONDecodeError:
            urls = [urls]
    single = payload.get("image_url")
    if isinstance(single, str) and single:
        urls = [*urls, single] if isinstance(urls, list) else [single]
    return [u for u in urls if isinstance(u, str) and u] if isinstance(urls, list) else []


def image_problem(url: str) -> str:
    """Why ``url`` shows no image to a worker ("" when it does). This server's own static and
    media files are read from disk (the fetcher refuses loopback addresses by design)."""
    own = _own_file(url)
    try:
        if own is not None:
            if not own:
                return "no such file on this server"
            validate_image_bytes(own, settings.IMAGE_MAX_PIXELS,
                                 max_bytes=settings.IMAGE_MAX_BYTES)
        else:
            fetch_image(url, timeout=settings.UPLOAD_IMAGE_CHECK_TIMEOUT,
                        max_bytes=settings.IMAGE_MAX_BYTES,
                        max_pixels=settings.IMAGE_MAX_PIXELS)
    except ImageFetchError as exc:
        return exc.message
    return ""


def _own_file(url: str) -> bytes | None:
    """The bytes of a URL under this server's STATIC_URL / MEDIA_URL (b"": no such file);
    None: not one of ours."""
    parts = urlsplit(url)
    base = urlsplit(settings.PUBLIC_BASE_URL)
    if parts.netloc and (parts.scheme, parts.netloc) != (base.scheme, base.netloc):
        return None
    path = parts.path
    if path.startswith(settings.STATIC_URL):
        try:
            found = finders.find(path.removeprefix(settings.STATIC_URL))
        except SuspiciousFileOperation:  # ../ out of the static folders
            return b""
        if not found or isinstance(found, list):
            return b""
        with open(found, "rb") as handle:
            return handle.read(settings.IMAGE_MAX_BYTES + 1)
    if path.startswith(settings.MEDIA_URL):
        try:
            with default_storage.open(path.removeprefix(settings.MEDIA_URL), "rb") as handle:
                return handle.read(settings.IMAGE_MAX_BYTES + 1)
        except (OSError, SuspiciousFileOperation):  # missing, a directory, or ../ outside
            return b""
    return None if parts.netloc else b""


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"
