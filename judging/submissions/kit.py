"""The benchmark kit: what a submitter needs to answer the benchmark and be matched exactly.

A zip with the items (``items.jsonl``: stable ``item_id``, instruction, a conversation's turns,
image URLs), the stored image files where the deployment holds them (``images/``), a
predictions template in each format the submission page takes (``predictions_template.csv``
and ``.jsonl``: one row per answer wanted, keyed by ``item_id``) and a README. Rows keyed by
``item_id`` always match one instance, so instructions that repeat across items (VisIT-Bench
asks the same question of many image pairs) no longer make rows ambiguous.

Nothing the judge compares against leaves: no reference answers, candidate references, focus
points or captions. The caller chooses the instances (a study's)
and the file: the zip is written member by member to a file object (a temporary file for a
download), instances are read in chunks and images copied in chunks, so a large benchmark
never sits in memory.
"""
from __future__ import annotations

import json
import tempfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from django.core.files.storage import default_storage
from django.db.models import Exists, OuterRef, Prefetch, QuerySet

from annotation.core.csv_safety import SafeDictWriter
from annotation.models import Instance, InstanceImage
from studies.models import study_pk

from ..models import Response

CHUNK = 500
COPY_CHUNK = 1 << 20
TEMPLATE_COLUMNS = ("item_id", "turn", "instruction", "images", "prediction")
ITEMS, CSV_TEMPLATE, JSONL_TEMPLATE, README = (
    "items.jsonl", "predictions_template.csv", "predictions_template.jsonl", "README.txt")
IMAGES_DIR = "images"


@dataclass
class KitSummary:
    items: int = 0
    template_rows: int = 0
    judged: int = 0
    images_included: int = 0


def benchmark_instances(study=None) -> QuerySet[Instance]:
    """The study's finished items (instances still being built by the pipeline are not part
    of it yet); None: the default study, the one submissions go to."""
    return Instance.objects.filter(stage=Instance.Stage.DONE, study_id=study_pk(study))


def _with_content(instances: QuerySet[Instance]) -> QuerySet[Instance]:
    judged = Response.objects.filter(instance=OuterRef("pk"), model__is_reference=True, turn=0,
                                     condition=Response.Condition.GENERATED)
    return (instances.select_related("family")
            .prefetch_related(Prefetch("instance_images",
                                       InstanceImage.objects.select_related("image")), "turns")
            .annotate(judged=Exists(judged)).order_by("pk"))


def _image_member(image) -> str | None:
    """Where a stored image file goes in the zip (named by the image's uuid), or None."""
    if not image.file:
        return None
    suffix = PurePosixPath(image.file.name).suffix.lower()[:8]
    return f"{IMAGES_DIR}/{image.uuid}{suffix}"


def _item(instance: Instance, members: dict[int, str | None]) -> dict:
    return {
        "item_id": str(instance.uuid), "dataset": instance.source,
        "source_id": instance.external_id, "kind": instance.kind,
        "category": instance.family.name if instance.family else "",
        "instruction": instance.instruction,
        "turns": [{"turn": t.turn, "capability": t.capability, "category": t.category,
                   "instruction": t.instruction} for t in instance.turns.all()],
        "images": [{"position": ii.position, "url": ii.image.source_url,
                    "file": members.get(ii.image_id)} for ii in instance.instance_images.all()],
        "judged": bool(instance.judged),
    }


def _template_rows(item: dict) -> Iterable[dict]:
    """One row per answer wanted: a conversation's turns one by one, else the item once."""
    urls = json.dumps([image["url"] for image in item["images"] if image["url"]])
    if item["turns"]:
        for turn in item["turns"]:
            yield {"item_id": item["item_id"], "turn": turn["turn"],
                   "instruction": turn["instruction"], "images": urls, "prediction": ""}
    else:
        yield {"item_id": item["item_id"], "turn": "", "instruction": item["instruction"],
               "images": urls, "prediction": ""}


def _copy_image(zf: zipfile.ZipFile, name: str, member: str) -> bool:
    """The stored file into the zip in chunks; a file missing from storage is left out (the
    item still carries its URL)."""
    try:
        src = default_storage.open(name, "rb")
    except (FileNotFoundError, OSError):
        return False
    with src, zf.open(member, "w", force_zip64=True) as dst:
        while chunk := src.read(COPY_CHUNK):
            dst.write(chunk)
    return True


def kit_write(out, instances: QuerySet[Instance], *, include_images: bool = True,
              upload_path: str = "/api/eval/submissions/") -> KitSummary:
    """Write the kit of ``instances`` as a zip to the binary file object ``out``; its README
    names ``upload_path`` (the study's submissions API) as where the filled template goes.

    A zip takes one member at a time, so the three listings are spooled to temporary files in
    one pass over the instances, then copied in."""
    summary = KitSummary()
    stored: dict[int, tuple[str, str]] = {}  # image pk -> (storage name, zip member)
    with tempfile.TemporaryDirectory(prefix="kit-") as spool:
        paths = {name: Path(spool) / name for name in (ITEMS, CSV_TEMPLATE, JSONL_TEMPLATE)}
        with open(paths[ITEMS], "w", encoding="utf-8", newline="") as items, \
                open(paths[CSV_TEMPLATE], "w", encoding="utf-8", newline="") as template_csv, \
                open(paths[JSONL_TEMPLATE], "w", encoding="utf-8", newline="") as template_jsonl:
            writer = SafeDictWriter(template_csv, TEMPLATE_COLUMNS)
            writer.writeheader()
            for instance in _with_content(instances).iterator(chunk_size=CHUNK):
                members = {}
                for ii in instance.instance_images.all() if include_images else ():
                    member = _image_member(ii.image)
                    if member:
                        stored.setdefault(ii.image_id, (ii.image.file.name, member))
                        members[ii.image_id] = member
                item = _item(instance, members)
                items.write(json.dumps(item, ensure_ascii=False) + "\n")
                for row in _template_rows(item):
                    writer.writerow(row)
                    template_jsonl.write(json.dumps(_jsonl_row(row), ensure_ascii=False) + "\n")
                    summary.template_rows += 1
                summary.items += 1
                summary.judged += item["judged"]
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(README, readme_text(summary, upload_path))
            for name, path in paths.items():
                zf.write(path, name)
            for storage_name, member in stored.values():
                summary.images_included += _copy_image(zf, storage_name, member)
    return summary


def _jsonl_row(row: dict) -> dict:
    """A template row as JSON: the turn only for conversations, images left to items.jsonl."""
    return {"item_id": row["item_id"], **({"turn": row["turn"]} if row["turn"] != "" else {}),
            "instruction": row["instruction"], "prediction": ""}


def readme_text(summary: KitSummary, upload_path: str = "/api/eval/submissions/") -> str:
    return f"""Benchmark kit
=============

{summary.items} items; {summary.judged} of them are judged today (single-turn items with a
verified reference, which the submission judge compares your answer with). Answers to the
others (conversations, items without a verified reference) are stored but not judged yet.

Files
-----
items.jsonl                 one item per line: item_id, dataset, source_id (the dataset's own
                            id), kind (single, multi, conversation), category, instruction,
                            turns (a conversation's instructions, answered one by one), images
                            (url, and file: the copy in images/ when this site stores one),
                            judged.
predictions_template.csv    one row per answer wanted: item_id, turn, instruction, images,
                            and an empty prediction column to fill.
predictions_template.jsonl  the same rows as JSON objects, one per line.
images/                     the stored image files, named by the image's id.

How rows are matched
--------------------
Keep the item_id column (and turn, for conversations) as it is and write your model's
answer in the prediction column; delete rows you do not answer. The item_id names exactly
one item, even when the same instruction is asked of many images, so every row you keep
matches. The instruction and images columns are only for you to read. Then upload the file
(.csv or .jsonl) on the submission page, or POST it to {upload_path}.

Without item_id a row is matched by its instruction and image URLs, and a row whose
instruction repeats across items without the images to tell them apart is skipped as
ambiguous.

Spreadsheets: a CSV cell that starts with =, +, -, @ is written with a leading apostrophe
so no spreadsheet runs it as a formula; the importer removes it again.
"""
