"""``import_study``: restore an archive made by ``export_study`` into an empty database.

Order matters, so that a refusal writes nothing:
1. read the manifest, check every member's presence and sha256 (the zip's own CRCs too);
2. check the database: same migration state as the archive, no study rows yet;
3. write the media files (outside any transaction: storage may be S3), then in one
   transaction load every row (Django's deserializer, raw saves as ``loaddata`` does), compare
   row counts with the manifest, check foreign keys, reset the PostgreSQL sequences past the
   restored ids. Any failure rolls the rows back and deletes the media files this restore wrote.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import zipfile
import zlib
from pathlib import PurePosixPath

from django.apps import apps
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.management.color import no_style
from django.core.serializers.base import DeserializationError
from django.db import (
    DEFAULT_DB_ALIAS,
    DatabaseError,
    DataError,
    IntegrityError,
    connections,
    transaction,
)

from annotation.core.jobs import occupying
from annotation.core.row_checks import database_refusal, object_problem
from studies.models import default_study_forget

from . import manifest as manifest_lib
from .contents import (
    MERGED_BY_NAME,
    REPLACED,
    all_tables_models,
    data_member,
    media_member,
    model_by_label,
    tables_that_must_be_empty,
)
from .errors import BackupError
from .migration_state import database_state
from .serial import load_stream

ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError)
MEDIA_PREFIX = media_member("")
BULK_SIZE = 1000


@contextlib.contextmanager
def _open(path):
    try:
        zf = zipfile.ZipFile(path)
    except FileNotFoundError:
        raise BackupError(f"No archive at {path}.") from None
    except ZIP_ERRORS as exc:
        raise BackupError(f"{path} is not a readable zip archive (truncated or corrupt?): "
                          f"{exc}") from None
    with zf:
        yield zf


def _read_manifest(zf: zipfile.ZipFile) -> dict:
    try:
        raw = zf.read(manifest_lib.MANIFEST)
    except KeyError:
        raise BackupError(f"The archive has no {manifest_lib.MANIFEST}: not a study backup.") \
            from None
    except ZIP_ERRORS as exc:
        raise BackupError(f"{manifest_lib.MANIFEST} is unreadable: {exc}") from None
    try:
        parsed = json.loads(raw)
    except ValueError as exc:
        raise BackupError(f"{manifest_lib.MANIFEST} is not valid JSON: {exc}") from None
    return manifest_lib.validate(parsed)


def _media_name(member: str) -> str:
    name = member[len(MEDIA_PREFIX):]
    parts = PurePosixPath(name).parts
    if not name or name.startswith("/") or "\\" in name or ".." in parts:
        raise BackupError(f"Unsafe media member name {member!r} in the archive.")
    return name


def _sha256(zf: zipfile.ZipFile, member: str) -> str:
    digest = hashlib.sha256()
    try:
        with zf.open(member) as src:
            while chunk := src.read(1 << 20):
                digest.update(chunk)
    except ZIP_ERRORS as exc:
        raise BackupError(f"Member {member} is corrupt: {exc}") from None
    return digest.hexdigest()


def _check_members(zf: zipfile.ZipFile, manifest: dict) -> None:
    names = zf.namelist()
    if len(names) != len(set(names)):
        raise BackupError("The archive holds a member name twice.")
    listed, present = set(manifest["files"]), set(names) - {manifest_lib.MANIFEST}
    if missing := sorted(listed - present):
        raise BackupError(f"Member {missing[0]} is listed in the manifest but missing from the "
                          f"archive ({len(missing)} missing).")
    if extra := sorted(present - listed):
        raise BackupError(f"Member {extra[0]} is not listed in the manifest.")
    expected_data = {data_member(label) for label in manifest["models"]}
    for member in sorted(listed):
        if member not in expected_data and not member.startswith(MEDIA_PREFIX):
            raise BackupError(f"Unexpected member {member} in the archive.")
        if member.startswith(MEDIA_PREFIX):
            _media_name(member)
        if _sha256(zf, member) != manifest["files"][member]["sha256"]:
            raise BackupError(f"sha256 mismatch for member {member}: the archive was "
                              "modified or damaged.")
    if missing_data := sorted(expected_data - listed):
        raise BackupError(f"The manifest lists no file for {missing_data[0]}.")


def _check_models(manifest: dict) -> list:
    known = model_by_label()
    if unknown := sorted(set(manifest["models"]) - set(known)):
        raise BackupError(f"The archive holds model {unknown[0]}, which this code does not have.")
    if absent := sorted(set(known) - set(manifest["models"])):
        raise BackupError(f"The archive has no data for model {absent[0]}.")
    return list(known.items())  # this code's load order: groups, users, then the apps


def _check_migrations(manifest: dict, using: str) -> None:
    diffs = manifest_lib.migration_differences(manifest["migrations"], database_state(using))
    if diffs:
        raise BackupError("Refusing to restore: the database's migration state differs from "
                          "the archive's (" + "; ".join(diffs) + "). Migrate the database to "
                          "the archive's state, or restore with the code version that made it.")


def _media_plan(zf: zipfile.ZipFile, manifest: dict) -> list[tuple[str, str]]:
    """(member, name) pairs to write; identical files already in storage are skipped."""
    plan = []
    for member, entry in manifest["files"].items():
        if not member.startswith(MEDIA_PREFIX):
            continue
        name = _media_name(member)
        if default_storage.exists(name):
            with default_storage.open(name, "rb") as fh:
                if hashlib.sha256(fh.read()).hexdigest() != entry["sha256"]:
                    raise BackupError(f"Media file {name} already exists in storage with other "
                                      "content; restore into empty media storage.")
            continue
        plan.append((member, name))
    return sorted(plan)


def _check_empty(using: str) -> None:
    for model in tables_that_must_be_empty():
        if model._base_manager.using(using).exists():
            raise BackupError(
                f"Refusing to restore into a non-empty database: table {model._meta.db_table} "
                "has rows. Restore into a freshly migrated database without study data.")


def _drop_replaced(using: str) -> None:
    """The fresh database's own default study goes; the archive's studies come instead (with
    their ids, which every restored row refers to)."""
    for label in REPLACED:
        apps.get_model(label)._base_manager.using(using).all().delete()
    default_study_forget()  # its remembered id is gone (harmless if the restore rolls back)


def _bulk_insertable(model) -> bool:
    """``bulk_create`` skips raw mode, so it would stamp auto_now(_add) fields with the restore
    time; such models, multi-table children and rows merged by name go through
    ``save(raw=True)`` instead."""
    if model._meta.parents or model._meta.label_lower in MERGED_BY_NAME:
        return False
    return not any(
        getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False)
        for f in model._meta.concrete_fields)


def _insert(model, batch: list, using: str) -> None:
    model._base_manager.using(using).bulk_create([d.object for _, d in batch])
    for _, d in batch:
        for accessor, ids in (d.m2m_data or {}).items():
            getattr(d.object, accessor).set(ids)


def _bulk(model, batch: list, using: str, member: str) -> None:
    """Insert ``(line, object)`` pairs at once; when the database refuses the batch, again
    one row at a time, so the refusal names the row."""
    try:
        with transaction.atomic(using=using):  # a savepoint: the retry below starts clean
            _insert(model, batch, using)
    except (IntegrityError, DataError):
        for line, d in batch:
            with database_refusal(f"{member} line {line}", BackupError), \
                    transaction.atomic(using=using):
                _insert(model, [(line, d)], using)
        raise


def _load_rows(zf: zipfile.ZipFile, models: list, using: str) -> None:
    """Every row passes the importers' one set of field checks (``annotation.core.row_checks``)
    before it is written; a refusal names the member and line."""
    for label, model in models:
        member, bulk, batch = data_member(label), _bulk_insertable(model), []
        try:
            with zf.open(member) as raw:
                stream = load_stream(io.TextIOWrapper(raw, encoding="utf-8"), using)
                for line, obj in enumerate(stream, start=1):
                    where = f"{member} line {line}"
                    if obj.object._meta.label_lower != label:
                        raise BackupError(f"{where} holds a row of "
                                          f"{obj.object._meta.label_lower}.")
                    if (problem := object_problem(obj.object)) is not None:
                        raise BackupError(f"{where}: {problem}")
                    if not bulk:  # merged rows may update a same-named existing row
                        with database_refusal(where, BackupError):
                            obj.save(using=using, force_insert=label not in MERGED_BY_NAME)
                        continue
                    batch.append((line, obj))
                    if len(batch) >= BULK_SIZE:
                        _bulk(model, batch, using, member)
                        batch = []
                _bulk(model, batch, using, member)
        except (DeserializationError, DatabaseError, ValueError, *ZIP_ERRORS) as exc:
            raise BackupError(f"Could not load {member}: {exc}") from exc


def _check_counts(manifest: dict, models: list, using: str) -> None:
    for label, model in models:
        found, expected = model._base_manager.using(using).count(), manifest["rows"][label]
        if found < expected or (found != expected and label not in MERGED_BY_NAME):
            raise BackupError(f"{label}: {found} rows after loading, the manifest says "
                              f"{expected}.")


def _check_constraints(using: str) -> None:
    tables = [m._meta.db_table for m in all_tables_models()]
    try:
        connections[using].check_constraints(table_names=tables)
    except DatabaseError as exc:
        raise BackupError(f"Restored rows break a database constraint: {exc}") from exc


def _write_media(zf: zipfile.ZipFile, plan: list[tuple[str, str]], written: list[str]) -> None:
    for member, name in plan:
        with zf.open(member) as src:
            saved = default_storage.save(name, ContentFile(src.read()))
        written.append(saved)
        if saved != name:
            raise BackupError(f"Storage saved media file {name} as {saved}.")


def reset_sequences(using: str = DEFAULT_DB_ALIAS) -> int:
    """Move every id sequence past the restored ids (what ``sqlsequencereset`` prints); rows
    inserted with explicit ids do not advance PostgreSQL sequences. No-op on SQLite."""
    connection = connections[using]
    statements = connection.ops.sequence_reset_sql(no_style(), all_tables_models())
    with connection.cursor() as cursor:
        for sql in statements:
            cursor.execute(sql)
    return len(statements)


def import_study(path: str | os.PathLike, *, using: str = DEFAULT_DB_ALIAS) -> dict:
    """Restore the archive at ``path`` (all or nothing); its manifest. BackupError on refusal.
    Counted against the job cap while it runs; one restore at a time (``JobsBusy``)."""
    with occupying("study_restore", fingerprint=""):
        return _import_study(path, using)


def _import_study(path: str | os.PathLike, using: str) -> dict:
    with _open(path) as zf:
        manifest = _read_manifest(zf)
        _check_members(zf, manifest)
        models = _check_models(manifest)
        _check_migrations(manifest, using)
        plan = _media_plan(zf, manifest)
        _check_empty(using)  # before any file is written; again inside the transaction
        written: list[str] = []
        try:
            _write_media(zf, plan, written)  # storage I/O (maybe S3) outside the transaction
            with transaction.atomic(using=using):
                _check_empty(using)
                _drop_replaced(using)
                _load_rows(zf, models, using)
                _check_counts(manifest, models, using)
                _check_constraints(using)
                reset_sequences(using)
        except BaseException:
            for name in written:
                with contextlib.suppress(Exception):
                    default_storage.delete(name)
            raise
    return manifest
