"""Models' responses: importing predictions (VisIT-Bench submission CSV, or JSONL) and giving the
human-verified reference its own responses so it competes as a model.

CSV: ``instruction``, ``instruction_category``, ``image`` (or ``images``, a JSON list, for
multi-image instances) and one column ``<model name> prediction`` per model; an optional
``item_id`` (our uuid or the source's id) wins over text matching.
JSONL: one object per line with ``model`` and ``prediction`` (or ``<model> prediction`` keys),
the same locating keys, and an optional ``turn`` (1–3) for conversations.
All rows are checked before anything is written; unmatched rows are reported and, unless
``skip_unmatched``, reject the whole file.
"""
import json

from django.db import transaction

from annotation.db_text import storage_problem
from annotation.models import Instance
from annotation.services.batches import RowError, rows_from_upload

from ..models import EvalModel, Response
from .errors import ImportRejected, ImportReport
from .matching import InstanceIndex

SUFFIX = " prediction"
REFERENCE_NAME = "Human-verified reference"


def _image_urls(row: dict, number: int) -> list[str]:
    raw = row.get("images", row.get("image", row.get("image_url", "")))
    if isinstance(raw, list):
        return [str(u) for u in raw]
    if raw is not None and not isinstance(raw, str):
        raise ImportRejected(f"Row {number}: images is not a JSON list")
    raw = (raw or "").strip()
    if raw.startswith("["):
        try:
            urls = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):
            urls = None
        if not isinstance(urls, list):
            raise ImportRejected(f"Row {number}: images is not a JSON list")
        return [str(u) for u in urls]
    return [raw] if raw else []


def _predictions(row: dict, number: int, model: str | None) -> list[tuple[str, str]]:
    if "prediction" in row and (row.get("model") or model):
        return [(str(row.get("model") or model), row["prediction"])]
    found = [(k[: -len(SUFFIX)].strip(), v) for k, v in row.items()
             if isinstance(k, str) and k.endswith(SUFFIX) and k[: -len(SUFFIX)].strip()]
    if not found:
        raise ImportRejected(f"Row {number}: no '<model name> prediction' column "
                             "(or 'model' + 'prediction')")
    return found


def _turn(row: dict, number: int) -> int:
    raw = str(row.get("turn") or "0").strip()
    if raw not in {"0", "1", "2", "3"}:
        raise ImportRejected(f"Row {number}: turn must be empty or 1–3, got {raw!r}")
    return int(raw)


@transaction.atomic
def predictions_import(name: str, data: bytes, *, model: str | None = None,
                       skip_unmatched: bool = False, overwrite: bool = False) -> ImportReport:
    """Create the responses of a predictions file, all or nothing (see module docstring).

    A model named in the file is registered if new. Re-importing the same file changes nothing;
    a different text for an existing response is an error unless ``overwrite``.
    """
    try:
        rows = rows_from_upload(name, data)
    except RowError as exc:
        raise ImportRejected("; ".join(exc.messages)) from exc
    report = ImportReport(rows=len(rows))
    index = InstanceIndex()
    planned = []
    for number, row in enumerate(rows, start=1):
        urls = _image_urls(row, number)
        instruction = row.get("instruction") or ""
        if not isinstance(instruction, str):
            raise ImportRejected(f"Row {number}: instruction is not text")
        instance, why = index.find(item_id=str(row.get("item_id") or ""),
                                   instruction=instruction, image_urls=urls)
        if instance is None:
            report.unmatched.append(f"row {number}: {why}")
            continue
        turn = _turn(row, number)
        for model_name, text in _predictions(row, number, model):
            if not isinstance(text, str) or not text.strip():
                raise ImportRejected(f"Row {number}: empty prediction for {model_name!r}")
            if (problem := storage_problem([model_name, text])) is not None:
                raise ImportRejected(f"Row {number}: {problem}")
            planned.append((number, instance, turn, model_name, text))
    if report.unmatched and not skip_unmatched:
        raise ImportRejected(f"{len(report.unmatched)} of {len(rows)} rows match no instance; "
                             "nothing imported:\n  " + "\n  ".join(report.unmatched[:50]), report)
    models = {}
    for number, instance, turn, model_name, text in planned:
        if model_name not in models:
            models[model_name], _ = EvalModel.objects.get_or_create(name=model_name[:100])
        existing = Response.objects.filter(instance=instance, model=models[model_name],
                                           turn=turn, condition=Response.Condition.GENERATED).first()
        if existing is None:
            Response.objects.create(instance=instance, model=models[model_name], turn=turn,
                                    text=text)
            report.created += 1
        elif existing.text == text:
            report.unchanged += 1
        elif overwrite:
            Response.objects.filter(pk=existing.pk).update(text=text)
            report.created += 1
        else:
            raise ImportRejected(f"Row {number}: {model_name!r} already has a different response "
                                 "for this instance (use overwrite)", report)
    return report


def reference_model(name: str = REFERENCE_NAME) -> EvalModel:
    """The model marked as the human-verified reference, created (or marked) as ``name`` if
    there is none yet."""
    reference = EvalModel.objects.filter(is_reference=True).first()
    if reference is None:
        reference, _ = EvalModel.objects.get_or_create(name=name, defaults={"family": "human"})
        EvalModel.objects.filter(pk=reference.pk).update(is_reference=True)
        reference.is_reference = True
    return reference


@transaction.atomic
def reference_responses_sync(name: str = REFERENCE_NAME) -> int:
    """Give every verified instance's reference output a Response of the reference model.

    Returns how many responses were created. The reference model is created (``is_reference``)
    if no model is marked as the reference yet.
    """
    reference = reference_model(name)
    have = set(Response.objects.filter(model=reference, turn=0).values_list("instance_id",
                                                                            flat=True))
    todo = (Instance.objects.filter(reference_status=Instance.ReferenceStatus.VERIFIED)
            .exclude(reference_output="").exclude(pk__in=have))
    created = Response.objects.bulk_create(
        Response(instance=i, model=reference, turn=0, text=i.reference_output) for i in todo)
    return len(created)
