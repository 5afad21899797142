"""The full JSONL dump (``annotation.content.exports.dump_jsonl``) back into a database, atomically.

Every line is parsed and validated (shape, choices, field lengths, UUIDs, 1–10 images, turns 1–3,
five rubric scores) before anything is written; a bad line raises ``ImportFailed`` naming it and
nothing is written. Records refer to each other by UUID, never by integer id.

Already present (the database wins, nothing is overwritten): an instance whose UUID, or whose
non-empty ``(source, external_id)``, is already in the database is skipped and counted, like the
source-format importers do, so importing the same dump twice is safe. Families are matched by UUID
then by name, images by UUID then by sha256, and reused. A rubric UUID that already belongs to
another instance is refused (it would silently move the rubric).

Image files are not in the dump: a stored file name is kept when this database's media storage
holds the file; otherwise the URL and metadata (sha256, size, format) are kept and an image that was fetched
becomes ``pending`` again (a URL to fetch lazily) or ``failed`` (no URL, no file).
"""
from __future__ import annotations

import json
import uuid as uuidlib
from dataclasses import dataclass, field
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.files.storage import default_storage
from django.db import transaction

from annotation.content.imports.common import ImportFailed, ImportSummary
from annotation.core.db_text import storage_problem
from annotation.core.row_checks import database_refusal, object_problem
from annotation.models import (
    ConversationTurn,
    Image,
    Instance,
    InstanceImage,
    InstructionFamily,
    ScoreRubric,
)
from studies.models import study_pk

INSTANCE_FIELDS = (
    "kind", "source", "external_id", "instruction", "stage", "candidate_reference",
    "reference_output", "reference_status", "rejection_reason", "flagged_harmful",
    "reference_meta", "extra",
)
# Added later: dumps written before them restore with the defaults.
OPTIONAL_INSTANCE_FIELDS = {"source_label": "", "reference_rated_by": ""}
IMAGE_FIELDS = ("url", "sha256", "external_id", "license", "attribution", "width", "height",
                "format", "file", "thumbnail", "fetch_status", "fetch_error")
FAMILY_FIELDS = ("name", "skill", "origin", "multi_image", "seed_instruction", "seed_output")
TURN_FIELDS = ("turn", "capability", "category", "instruction", "reference_answer", "focus_points")


@dataclass
class _Line:
    number: int
    uuid: str
    instance: Instance
    family: dict | None
    images: list[tuple[dict, InstanceImage]] = field(default_factory=list)
    turns: list[ConversationTurn] = field(default_factory=list)
    rubrics: list[ScoreRubric] = field(default_factory=list)


def import_jsonl_dump(source, *, line_name: str = "JSONL dump: line",
                      study=None) -> ImportSummary:
    """Validate the whole dump, then write it into ``study`` (None: the default study) in one
    transaction (all or nothing). Refusals name a line as ``f"{line_name} {number}"`` (a caller
    reading another file names its row)."""
    lines = _parse(_read(source), line_name)
    sid = study_pk(study)
    summary = ImportSummary(details={"images reused": 0})
    with transaction.atomic():
        images: dict[str, Image] = {}
        families: dict[str, InstructionFamily] = {}
        for line in lines:
            with database_refusal(f"{line_name} {line.number}", ImportFailed):
                created = _write(line, images, families, summary, line_name, sid)
            summary.created += created
            summary.skipped += not created
    return summary


def _read(source) -> str:
    try:
        if isinstance(source, (str, Path)):
            return Path(source).read_text(encoding="utf-8")
        data = source.read()
        return data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as exc:
        raise ImportFailed(f"JSONL dump: not UTF-8 ({exc})") from exc


# -- validation (no writes) ----------------------------------------------------------------------

def _parse(text: str, line_name: str) -> list[_Line]:
    lines, seen = [], set()
    # split on "\n" only: the dump writes U+2028, U+0085 … raw inside JSON strings
    for number, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
            line = _validate(number, record)
        except json.JSONDecodeError as exc:
            raise ImportFailed(f"{line_name} {number}: not JSON ({exc.msg})") from exc
        except ValidationError as exc:
            raise ImportFailed(f"{line_name} {number}: {'; '.join(_messages(exc))}") from exc
        if line.uuid in seen:
            raise ImportFailed(f"{line_name} {number}: instance {line.uuid} appears twice")
        seen.add(line.uuid)
        lines.append(line)
    return lines


def _messages(exc: ValidationError) -> list[str]:
    if hasattr(exc, "error_dict"):
        return [f"{name}: {' '.join(errs)}" for name, errs in exc.message_dict.items()]
    return exc.messages


def _require(record, keys: tuple[str, ...], what: str) -> None:
    if not isinstance(record, dict):
        raise ValidationError(f"{what} must be a JSON object")
    missing = [k for k in keys if k not in record]
    if missing:
        raise ValidationError(f"{what} lacks {', '.join(missing)}")


def _list(record: dict, key: str, what: str) -> list:
    value = record.get(key, [])
    if not isinstance(value, list):
        raise ValidationError(f"{what}: {key} must be a list")
    return value


def _uuid(value, what: str) -> str:
    try:
        return str(uuidlib.UUID(str(value)))
    except ValueError as exc:
        raise ValidationError(f"{what}: {value!r} is not a UUID") from exc


def _clean(obj, what: str, exclude: list[str]) -> None:
    """Django's field validation, then the importers' one set of field checks
    (``annotation.core.row_checks``: control characters in names, URLs, lengths)."""
    try:
        obj.full_clean(exclude=exclude, validate_unique=False, validate_constraints=False)
    except ValidationError as exc:
        raise ValidationError(f"{what}: {'; '.join(_messages(exc))}") from exc
    if (problem := object_problem(obj)) is not None:
        raise ValidationError(f"{what}: {problem}")


def _validate(number: int, record) -> _Line:
    _require(record, ("uuid", *INSTANCE_FIELDS, "family", "images", "turns", "rubrics"), "record")
    for key, value in record.items():  # NUL / lone surrogates pass full_clean but not the database
        if (problem := storage_problem([key, value])) is not None:
            raise ValidationError(f"{key[:60]!r}: {problem}")
    instance = Instance(uuid=_uuid(record["uuid"], "uuid"),
                        **{k: record[k] for k in INSTANCE_FIELDS},
                        **{k: record.get(k, d) for k, d in OPTIONAL_INSTANCE_FIELDS.items()})
    _clean(instance, "instance", ["family", "stage_task"])
    line = _Line(number, str(instance.uuid), instance, record["family"])
    if line.family is not None:
        _validate_family(line.family)
    images = _list(record, "images", "instance")
    if len(images) > 10:
        raise ValidationError(f"an instance holds at most 10 images, not {len(images)}")
    for position, data in enumerate(images):
        what = f"image {position + 1}"
        _validate_image(data, what, extra=("caption", "blip2_caption"))
        link = InstanceImage(position=position, caption=data["caption"],
                             blip2_caption=data["blip2_caption"])
        _clean(link, what, ["instance", "image"])
        line.images.append((data, link))
    for n, data in enumerate(_list(record, "turns", "instance"), start=1):
        _require(data, TURN_FIELDS, f"turn {n}")
        turn = ConversationTurn(**{k: data[k] for k in TURN_FIELDS})
        _clean(turn, f"turn {n}", ["instance"])
        if not 1 <= (turn.turn or 0) <= 3 or turn.turn in {t.turn for t in line.turns}:
            raise ValidationError(f"turn {n}: turn number {turn.turn!r} must be 1–3 and unique")
        line.turns.append(turn)
    for n, data in enumerate(_list(record, "rubrics", "instance"), start=1):
        _require(data, ("uuid", "criteria", "scores", "reference_answer"), f"rubric {n}")
        scores = data["scores"]
        if not isinstance(scores, list) or len(scores) != 5:
            raise ValidationError(f"rubric {n}: scores must list 5 descriptions (1–5)")
        rubric = ScoreRubric(uuid=_uuid(data["uuid"], f"rubric {n}"), criteria=data["criteria"],
                             reference_answer=data["reference_answer"],
                             **{f"score{i}": s for i, s in enumerate(scores, start=1)})
        _clean(rubric, f"rubric {n}", ["instance"])
        line.rubrics.append(rubric)
    return line


def _validate_image(data, what: str, extra: tuple[str, ...] = ()) -> None:
    _require(data, ("uuid", *IMAGE_FIELDS, *extra), what)
    _uuid(data["uuid"], what)
    url = data["url"] or ""
    # Real VisIT-Bench URLs hold spaces, which Django's URLValidator refuses: check only what
    # the source importers rely on (a string, http(s), fits the column).
    if not isinstance(url, str) or len(url) > 1000 or (
            url and not url.lower().startswith(("http://", "https://"))):
        raise ValidationError(f"{what}: url must be an http(s) URL of at most 1000 characters")
    _clean(_image(data), what, ["file", "thumbnail", "source_url"])


def _validate_family(data) -> None:
    _require(data, ("uuid", *FAMILY_FIELDS, "seed_images"), "family")
    family = InstructionFamily(uuid=_uuid(data["uuid"], "family"),
                               **{k: data[k] for k in FAMILY_FIELDS})
    _clean(family, "family", [])
    for n, seed in enumerate(_list(data, "seed_images", "family"), start=1):
        _validate_image(seed, f"family seed image {n}")


def _image(data: dict) -> Image:
    """An unsaved image from its dump; file names kept only when the storage holds the file."""
    image = Image(
        uuid=data["uuid"], source_url=data["url"] or "", sha256=data["sha256"] or None,
        external_id=data["external_id"], license=data["license"],
        attribution=data["attribution"], width=data["width"], height=data["height"],
        format=data["format"], fetch_status=data["fetch_status"], fetch_error=data["fetch_error"],
    )
    for name in ("file", "thumbnail"):
        stored = data[name]
        if stored and isinstance(stored, str) and default_storage.exists(stored):
            getattr(image, name).name = stored
    if image.fetch_status == Image.FetchStatus.OK and not image.file:
        if image.source_url:  # fetch it again lazily
            image.fetch_status, image.fetch_error = Image.FetchStatus.PENDING, ""
        else:
            image.fetch_status = Image.FetchStatus.FAILED
            image.fetch_error = "stored file not in this database's storage"
    return image


# -- writing (inside the transaction) -----------------------------------------------------------

def _write(line: _Line, images: dict, families: dict, summary: ImportSummary,
           line_name: str, sid: int) -> bool:
    instance = line.instance
    instance.study_id = sid
    present = Instance.objects.filter(uuid=instance.uuid)
    if instance.external_id:
        present = present | Instance.objects.filter(
            study_id=sid, source=instance.source, external_id=instance.external_id)
    if present.exists():
        return False
    for rubric in line.rubrics:
        if ScoreRubric.objects.filter(uuid=rubric.uuid).exists():
            raise ImportFailed(f"{line_name} {line.number}: rubric {rubric.uuid} already "
                               "belongs to another instance")
    if line.family is not None:
        instance.family = _family(line.family, images, families, summary)
    instance.save()
    for data, link in line.images:
        link.instance, link.image = instance, _stored_image(data, images, summary)
    InstanceImage.objects.bulk_create(link for _, link in line.images)
    for turn in line.turns:
        turn.instance = instance
    ConversationTurn.objects.bulk_create(line.turns)
    for rubric in line.rubrics:
        rubric.instance = instance
    ScoreRubric.objects.bulk_create(line.rubrics)
    return True


def _stored_image(data: dict, cache: dict, summary: ImportSummary) -> Image:
    key = str(uuidlib.UUID(str(data["uuid"])))
    if key not in cache:
        image = Image.objects.filter(uuid=key).first()
        if image is None and data["sha256"]:
            image = Image.objects.filter(sha256=data["sha256"]).first()
        if image is None:
            image = _image(data)
            image.save()
        else:
            summary.details["images reused"] += 1
        cache[key] = image
    return cache[key]


def _family(data: dict, images: dict, cache: dict, summary: ImportSummary) -> InstructionFamily:
    key = str(uuidlib.UUID(str(data["uuid"])))
    if key not in cache:
        family = (InstructionFamily.objects.filter(uuid=key).first()
                  or InstructionFamily.objects.filter(name=data["name"]).first())
        if family is None:
            family = InstructionFamily.objects.create(
                uuid=key, **{k: data[k] for k in FAMILY_FIELDS})
            for seed in data["seed_images"]:
                family.seed_images.add(_stored_image(seed, images, summary))
        cache[key] = family
    return cache[key]
