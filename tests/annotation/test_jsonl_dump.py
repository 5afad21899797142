"""The full JSONL dump: export → import into an empty database → export is byte-identical, on data
imported from the real files; malformed dumps name the line and write nothing; re-imports skip."""
import json

import pytest
from django.core.files.storage import default_storage
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.content.exports import export_dataset
from annotation.content.imports.common import ImportFailed
from annotation.content.imports.convbench import import_convbench
from annotation.content.imports.jsonl_dump import import_jsonl_dump
from annotation.content.imports.prometheus import import_prometheus
from annotation.content.imports.visitbench import import_visitbench
from annotation.models import (
    ConversationTurn,
    Image,
    Instance,
    InstanceImage,
    InstructionFamily,
    ScoreRubric,
)
from tests.support.shared_data import SHARED_DATA

DATA = SHARED_DATA
MULTI = DATA / "visit_bench" / "visit_bench_multi_images.csv"
SINGLE = DATA / "visit_bench" / "visit_fully_annotated_example.csv"
CONV = DATA / "convbench" / "ConvBench.xlsx"
CONV_IMAGES = DATA / "convbench" / "images"
PROM = DATA / "prometheus_vision" / "sample_eval_data.jsonl"

pytestmark = pytest.mark.django_db

CONTENT = (Instance, Image, InstructionFamily, ScoreRubric, ConversationTurn, InstanceImage)


def _load_real_data(with_convbench: bool = True) -> None:
    for path in (MULTI, SINGLE, CONV, PROM):
        if not path.exists():
            pytest.skip(f"{path} not available")
    import_visitbench(MULTI)
    import_visitbench(SINGLE)
    if with_convbench:  # 578 stored images: slow, so only where files matter
        import_convbench(CONV, CONV_IMAGES)
    import_prometheus(PROM)
    # Something the source files never set, so the dump must carry it.
    instance = Instance.objects.filter(kind="multi").order_by("pk").first()
    instance.flagged_harmful = True
    instance.reference_meta = {"model": "gpt-4", "prompt_version": "v1", "tokens": 812}
    instance.save()


def _empty_database() -> None:
    """Delete every content row (files stay in storage, as on a machine sharing the media)."""
    Instance.objects.all().delete()
    InstructionFamily.objects.all().delete()
    Image.objects.all().delete()
    assert not any(model.objects.exists() for model in CONTENT)


def _counts() -> dict:
    return {model.__name__: model.objects.count() for model in CONTENT}


def _int_values(value, path=""):
    """Every integer in a record outside the free-form source fields."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key not in ("extra", "reference_meta", "width", "height", "turn"):
                yield from _int_values(item, f"{path}.{key}")
    elif isinstance(value, list):
        for n, item in enumerate(value):
            yield from _int_values(item, f"{path}[{n}]")
    elif isinstance(value, int) and not isinstance(value, bool):
        yield path


@pytest.mark.slow
def test_dump_round_trips_byte_identical_through_an_empty_database(tmp_path):
    _load_real_data()
    before = _counts()
    max_pk = Instance.objects.order_by("-pk").values_list("pk", flat=True).first()
    dump = tmp_path / "dump.jsonl"
    call_command("export_dataset", "--format", "jsonl", "--out", str(dump))
    first = dump.read_bytes()
    records = [json.loads(line) for line in first.decode("utf-8").splitlines()]
    assert len(records) == before["Instance"] == 100 + 10 + 578 + 3
    assert [path for r in records for path in _int_values(r)] == []  # no database ids leak
    assert {r["kind"] for r in records} == {"single", "multi", "conversation"}

    _empty_database()
    call_command("import_dataset", str(dump))
    assert _counts() == before
    # New rows got new integer ids, yet the dump is the same bytes: ids are not in it.
    assert Instance.objects.order_by("pk").values_list("pk", flat=True).first() > max_pk
    assert export_dataset("jsonl") == first
    # Data the source formats hold survives too, and stored files are still used.
    flagged = Instance.objects.get(flagged_harmful=True)
    assert flagged.reference_meta["tokens"] == 812
    assert Image.objects.filter(fetch_status="ok").exclude(file="").count() == len(
        {p.name for p in CONV_IMAGES.iterdir()})
    conversation = Instance.objects.get(source="convbench", external_id="convbench:1")
    assert [t.capability for t in conversation.turns.all()] == [
        "perception", "reasoning", "creation"]

    # A database without the stored file keeps the image's hash and metadata, not the file.
    stored = conversation.instance_images.get().image
    sha256, size = stored.sha256, (stored.width, stored.height)
    default_storage.delete(stored.file.name)
    _empty_database()
    import_jsonl_dump(dump)
    image = Image.objects.get(uuid=stored.uuid)
    assert not image.file and image.sha256 == sha256 and (image.width, image.height) == size
    assert image.fetch_status == "failed"  # ConvBench images have no URL to fetch again


def test_malformed_dump_names_the_line_and_writes_nothing(tmp_path):
    _load_real_data(with_convbench=False)
    lines = export_dataset("jsonl").decode("utf-8").splitlines()
    _empty_database()
    record = json.loads(lines[49])
    record["reference_status"] = "maybe"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([*lines[:49], json.dumps(record), *lines[50:]]) + "\n",
                   encoding="utf-8")
    with pytest.raises(ImportFailed, match=r"line 50: .*reference_status"):
        import_jsonl_dump(bad)
    assert not any(model.objects.exists() for model in CONTENT)

    bad.write_text("\n".join([*lines[:100], "{not json", *lines[100:]]) + "\n", encoding="utf-8")
    with pytest.raises(CommandError, match=r"line 101: not JSON.*nothing was imported"):
        call_command("import_dataset", str(bad))
    record = json.loads(lines[2])
    record["images"] = record["images"] * 11
    bad.write_text("\n".join([lines[0], lines[1], json.dumps(record)]) + "\n", encoding="utf-8")
    with pytest.raises(ImportFailed, match="line 3: an instance holds at most 10 images"):
        import_jsonl_dump(bad)
    assert not any(model.objects.exists() for model in CONTENT)


def test_importing_into_a_database_that_holds_the_same_instances_skips_them(tmp_path):
    """Decision: skip (the database wins, nothing is overwritten), as the source importers do."""
    _load_real_data(with_convbench=False)
    dump = tmp_path / "dump.jsonl"
    dump.write_bytes(export_dataset("jsonl"))
    before = _counts()
    summary = import_jsonl_dump(dump)
    assert (summary.created, summary.skipped) == (0, before["Instance"]) and _counts() == before
    # Some present, some missing: only the missing ones are created, reusing present images.
    Instance.objects.filter(source="prometheus").delete()
    summary = import_jsonl_dump(dump)
    assert (summary.created, summary.skipped) == (3, before["Instance"] - 3)
    assert _counts() == before
