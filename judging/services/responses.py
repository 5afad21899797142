"""Models' responses: importing predictions (VisIT-Bench submission CSV, or JSONL) and giving the
human-verified reference its own responses so it competes as a model.

Identity: a response is (instance, model, turn); the instance is found by ``item_id`` when given
and known, else by instruction + image URLs (``matching``). A column named after VisIT-Bench's
reference (``human_verified_reference prediction``) fills the reference model.

CSV: ``instruction``, ``instruction_category``, ``image`` (or ``images``, a JSON list, for
multi-image instances) and one column ``<model name> prediction`` per model; an optional
``item_id`` (our uuid or the source's id) wins over text matching.
JSONL: one object per line with ``model`` and ``prediction`` (or ``<model> prediction`` keys),
the same locating keys, and an optional ``turn`` (1–3) for conversations.
An empty prediction is an answer (the model said nothing). All rows are checked before anything
is written (``annotation.core.row_checks``); unmatched rows are reported and, unless
``skip_unmatched``, reject the whole file.
"""
import json
from dataclasses import dataclass, field

from django.db import transaction

from annotation.core.row_checks import database_refusal, row_problem
from annotation.engine.services.batches import RowError, rows_from_upload
from annotation.models import ConversationTurn, Instance
from studies.models import study_pk

from ..models import Comparison, EvalModel, Judgment, Response
from .errors import ImportRejected, ImportReport
from .matching import InstanceIndex

SUFFIX = " prediction"
REFERENCE_NAME = "Human-verified reference"
VISITBENCH_REFERENCE_NAME = "human_verified_reference"  # as VisIT-Bench's files name it
REFERENCE_ALIASES = frozenset({REFERENCE_NAME, VISITBENCH_REFERENCE_NAME})


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
                       skip_unmatched: bool = False, overwrite: bool = False,
                       study=None) -> ImportReport:
    """Create the responses of a predictions file, all or nothing (see module docstring).

    A model named in the file is registered if new. With ``study``, rows match that study's
    instances only and the models are the study's (None: every instance, the default study's
    models, as before studies). Re-importing the same file changes nothing;
    a different text for an existing response is an error unless ``overwrite``.
    """
    try:
        rows = rows_from_upload(name, data)
    except RowError as exc:
        raise ImportRejected("; ".join(exc.messages)) from exc
    return predictions_import_rows(rows, model=model, skip_unmatched=skip_unmatched,
                                   overwrite=overwrite, study=study)


@transaction.atomic
def predictions_import_rows(rows: list[dict], *, model: str | None = None,
                            skip_unmatched: bool = False, overwrite: bool = False,
                            study=None) -> ImportReport:
    """``predictions_import`` after the file is parsed (a submission renames its model first).
    ``report.responses`` lists what was created, for callers that build on it."""
    report = ImportReport(rows=len(rows))
    index = InstanceIndex(study)
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
            if not isinstance(text, str):
                raise ImportRejected(f"Row {number}: the prediction of {model_name!r} is not text")
            # an empty text is an answer: the model said nothing (and loses)
            problem = (row_problem(EvalModel, {"name": model_name})
                       or row_problem(Response, {"text": text}))
            if problem is not None:
                raise ImportRejected(f"Row {number}: {problem}")
            planned.append((number, instance, turn, model_name, text))
    if report.unmatched and not skip_unmatched:
        raise ImportRejected(f"{len(report.unmatched)} of {len(rows)} rows match no instance; "
                             "nothing imported:\n  " + "\n  ".join(report.unmatched[:50]), report)
    models: dict[str, EvalModel] = {}
    for number, instance, turn, model_name, text in planned:
        with database_refusal(f"Row {number}", ImportRejected):
            _store_prediction(report, models, number, instance, turn, model_name, text,
                              overwrite=overwrite, study=study)
    return report


def _store_prediction(report: ImportReport, models: dict, number: int, instance, turn: int,
                      model_name: str, text: str, *, overwrite: bool, study=None) -> None:
    """One planned prediction: created, unchanged, overwritten, or refused as different."""
    if model_name in REFERENCE_ALIASES and model_name not in models:
        models[model_name] = reference_model_for_import(model_name, create=True, study=study)
    if model_name not in models:
        models[model_name], _ = EvalModel.objects.get_or_create(name=model_name,
                                                                study_id=study_pk(study))
    existing = Response.objects.filter(instance=instance, model=models[model_name],
                                       turn=turn, condition=Response.Condition.GENERATED).first()
    if existing is None:
        report.responses.append(Response.objects.create(
            instance=instance, model=models[model_name], turn=turn, text=text))
        report.created += 1
    elif existing.text == text:
        report.unchanged += 1
    elif overwrite:
        Response.objects.filter(pk=existing.pk).update(text=text)
        report.created += 1
    else:
        raise ImportRejected(f"Row {number}: {model_name!r} already has a different response "
                             "for this instance (use overwrite)", report)


class ReferenceUnknown(ValueError):
    """``set_reference`` named a model that does not exist; nothing changed."""


def reference_model(name: str = REFERENCE_NAME) -> EvalModel:
    """The model marked as the human-verified reference, created (or marked) as ``name`` if
    there is none yet."""
    reference = EvalModel.objects.in_study().filter(is_reference=True).first()
    if reference is None:
        reference = reference_model_set(name, create=True)
    return reference


@transaction.atomic
def reference_model_set(name: str, *, create: bool = False, study=None) -> EvalModel:
    """Make ``name`` the reference model of ``study`` (None: the default study) — the one
    "win rate vs reference" is measured against; the study's previous reference becomes an
    ordinary model. Responses and judgments are not touched. Unknown names are refused unless
    ``create``."""
    models = EvalModel.objects.in_study(study)
    list(models.select_for_update().filter(is_reference=True))  # one at a time
    model = models.filter(name=name).first()
    if model is None:
        if not create:
            raise ReferenceUnknown(f"no model named {name!r}")
        model = EvalModel.objects.create(name=name[:100], family=EvalModel.HUMAN_FAMILY,
                                         study_id=study_pk(study))
    models.filter(is_reference=True).exclude(pk=model.pk).update(is_reference=False)
    if not model.is_reference:
        EvalModel.objects.filter(pk=model.pk).update(is_reference=True)
        model.is_reference = True
    return model


def reference_model_for_import(name: str, *, create: bool, study=None) -> EvalModel | None:
    """What a file's reference name (``REFERENCE_ALIASES``) stands for: the model marked as the
    reference; else the model of that name, marked now; else, with ``create``, a new one."""
    marked = EvalModel.objects.in_study(study).filter(is_reference=True).first()
    if marked is not None:
        return marked
    if not create and not EvalModel.objects.in_study(study).filter(name=name).exists():
        return None
    return reference_model_set(name, create=True, study=study)


@dataclass
class ReferenceSync:
    created: int = 0
    updated: int = 0
    removed: int = 0  # unjudged responses of instances that no longer have a reference
    stale: list[str] = field(default_factory=list)  # judged responses whose reference changed


@transaction.atomic
def reference_responses_sync(name: str = REFERENCE_NAME) -> ReferenceSync:
    """Give the reference model a response wherever an instance has a reference, so the
    reference competes like any model: the verified ``reference_output`` of single- and
    multi-image instances (turn 0), and a conversation's per-turn reference answers when every
    turn has one. Idempotent. A reference text that changed since (e.g. corrected data) is
    updated unless people or judges already compared that response — then it is left as
    judged and listed in ``stale``. Instances without a reference get nothing; a single-turn
    reference response left from before (an answer since rejected, a dataset label once taken
    for the reference) is removed when nobody compared it, else listed in ``stale``.
    """
    wanted: dict[tuple[int, int], str] = {}
    for pk, text in (Instance.objects.filter(reference_status=Instance.ReferenceStatus.VERIFIED)
                     .exclude(kind=Instance.Kind.CONVERSATION).exclude(reference_output="")
                     .values_list("pk", "reference_output")):
        wanted[(pk, 0)] = text
    turns: dict[int, dict[int, str]] = {}
    for pk, turn, text in ConversationTurn.objects.filter(
            instance__kind=Instance.Kind.CONVERSATION).values_list(
            "instance_id", "turn", "reference_answer"):
        turns.setdefault(pk, {})[turn] = text
    for pk, texts in turns.items():
        if all(t.strip() for t in texts.values()):
            wanted |= {(pk, turn): text for turn, text in texts.items()}
    reference = EvalModel.objects.in_study().filter(is_reference=True).first()
    if reference is None and not wanted:
        return ReferenceSync()  # no reference anywhere: no reference model either
    reference = reference or reference_model(name)
    have = {(r.instance_id, r.turn): r for r in Response.objects.filter(
        model=reference, condition=Response.Condition.GENERATED)}
    result = ReferenceSync()
    result.created = len(Response.objects.bulk_create(
        Response(instance_id=pk, model=reference, turn=turn, text=text)
        for (pk, turn), text in wanted.items() if (pk, turn) not in have))
    changed = [have[key] for key, text in wanted.items() if key in have and have[key].text != text]
    orphans = [r for key, r in have.items() if key not in wanted and key[1] == 0]
    judged = _judged({r.pk for r in changed + orphans})
    for response in orphans:
        if response.pk in judged:
            result.stale.append(str(response.uuid))
    removable = [r.pk for r in orphans if r.pk not in judged]
    result.removed = Response.objects.filter(pk__in=removable).delete()[1].get(
        "judging.Response", 0) if removable else 0
    for response in changed:
        if response.pk in judged:
            result.stale.append(str(response.uuid))
        else:
            Response.objects.filter(pk=response.pk).update(text=wanted[(response.instance_id,
                                                                        response.turn)])
            result.updated += 1
    return result


def _judged(response_ids: set[int]) -> set[int]:
    """Responses that a comparison or a judgment already uses."""
    if not response_ids:
        return set()
    used = set(Comparison.objects.filter(response_a_id__in=response_ids)
               .values_list("response_a_id", flat=True))
    used |= set(Comparison.objects.filter(response_b_id__in=response_ids)
                .values_list("response_b_id", flat=True))
    used |= set(Judgment.objects.filter(response_id__in=response_ids)
                .values_list("response_id", flat=True))
    return used
