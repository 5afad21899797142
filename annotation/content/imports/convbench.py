"""ConvBench xlsx into three-turn conversations, atomically.

The public workbook holds only the instructions, so turns get their capability by position
(perception, reasoning, creation) and empty reference answers / focus points. Images are matched
by ``image_id`` in a folder; a missing file leaves a placeholder image row named by that id.

Identity: a row is the conversation with the same ConvBench ``ID`` (``external_id``
``convbench:<ID>``, source ``convbench``); re-importing skips it. Images are the same image when
their ``image_id`` is.
"""
from __future__ import annotations

from django.db import transaction

from annotation.content.formats import CONVBENCH_TURN_SKILLS, FormatError, parse_convbench_xlsx
from annotation.content.imports.common import ImportFailed, ImportSummary
from annotation.content.imports.images import image_for_external_id, image_store_bytes
from annotation.core.db_text import storage_problem
from annotation.core.image_fetch import ImageFetchError
from annotation.core.row_checks import database_refusal, field_problem
from annotation.models import ConversationTurn, Image, Instance, InstanceImage
from studies.models import study_pk

SOURCE = "convbench"


def import_convbench(source, images_dir=None, study=None) -> ImportSummary:
    """Parse the workbook, then write every conversation into ``study`` (None: the default
    study) in one transaction (all or nothing)."""
    sid = study_pk(study)
    try:
        dataset = parse_convbench_xlsx(source, images_dir)
    except FormatError as exc:
        raise ImportFailed(f"ConvBench workbook: {exc}") from exc
    summary = ImportSummary(details={"images missing": len(dataset.missing_image_ids)})
    with transaction.atomic():
        for record in dataset.records:
            _check(record)
            with database_refusal(_where(record), ImportFailed):
                created = _write(record, sid)
            summary.created += created
            summary.skipped += not created
    return summary


def _where(record) -> str:
    return f"ConvBench workbook: conversation ID {record.id}"


def _write(record, sid: int) -> bool:
    external_id = f"{SOURCE}:{record.id}"
    if Instance.objects.filter(study_id=sid, source=SOURCE, external_id=external_id).exists():
        return False
    if record.image_path is not None:
        try:
            image = image_store_bytes(record.image_path.read_bytes(),
                                      external_id=record.image_id)
        except ImageFetchError as exc:
            raise ImportFailed(f"{_where(record)}: image {record.image_id!r} is not "
                               f"usable ({exc})") from exc
    else:
        image = image_for_external_id(record.image_id)
    instance = Instance.objects.create(
        study_id=sid,
        kind=Instance.Kind.CONVERSATION, instruction=record.turns[0], source=SOURCE,
        external_id=external_id, stage=Instance.Stage.DONE,
        extra={"convbench_id": record.id, "image_id": record.image_id},
    )
    InstanceImage.objects.create(instance=instance, image=image, position=0)
    ConversationTurn.objects.bulk_create(
        ConversationTurn(instance=instance, turn=n, capability=capability,
                         instruction=text)
        for n, (capability, text) in enumerate(
            zip(CONVBENCH_TURN_SKILLS, record.turns, strict=True), start=1)
    )
    return True


def _check(record) -> None:
    """The importers' one set of field checks (``annotation.core.row_checks``)."""
    problem = storage_problem(record)
    if problem is None and (bad := field_problem(Image, "external_id", record.image_id)):
        problem = f"image_id: {bad}"
    for n, text in enumerate(record.turns, start=1):
        if problem is None and (bad := field_problem(ConversationTurn, "instruction", text)):
            problem = f"turn {n} instruction: {bad}"
    if problem is not None:
        raise ImportFailed(f"{_where(record)}: {problem}")
