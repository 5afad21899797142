"""``export_study``: every row of the study and its media files into one zip archive.

Rows are read in one read-only transaction (REPEATABLE READ on PostgreSQL), so the archive is a
consistent snapshot even while annotators keep working. The zip is written next to the target
and renamed into place at the end: a failed export leaves no half-written archive behind.
"""
from __future__ import annotations

import contextlib
import json
import os
import platform
import zipfile
from pathlib import Path

import django
from django.core.files.storage import default_storage
from django.db import DEFAULT_DB_ALIAS, connections, transaction

from annotation.core.jobs import occupying

from . import manifest as manifest_lib
from .contents import (
    MERGED_BY_NAME,
    NATURAL_FOREIGN_KEYS,
    data_member,
    media_member,
    media_names,
    study_models,
)
from .errors import BackupError
from .migration_state import database_state
from .serial import HashingWriter, dump_model

COPY_CHUNK = 1 << 20


@contextlib.contextmanager
def _snapshot(using: str):
    connection = connections[using]
    outermost = not connection.in_atomic_block
    with transaction.atomic(using=using):
        if outermost and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        yield


def _copy_media(zf: zipfile.ZipFile, name: str) -> dict:
    try:
        src = default_storage.open(name, "rb")
    except FileNotFoundError:
        raise BackupError(f"Media file {name!r} is referenced by the database but missing "
                          "from storage; nothing was exported.") from None
    with src, zf.open(media_member(name), "w", force_zip64=True) as dst:
        sink = HashingWriter(dst)
        while chunk := src.read(COPY_CHUNK):
            sink.write_bytes(chunk)
        return sink.entry()


def export_study(path: str | os.PathLike, *, using: str = DEFAULT_DB_ALIAS) -> dict:
    """Write the whole study to the zip at ``path`` (replaced if it exists); the manifest.
    Counted against the job cap while it runs (``JobsBusy`` past it, or while a backup to the
    same path runs)."""
    with occupying("study_backup", fingerprint=str(Path(path).resolve())):
        return _export_study(path, using)


def _export_study(path: str | os.PathLike, using: str) -> dict:
    target = Path(path)
    partial = target.with_name(target.name + ".partial")
    files, rows, labels = {}, {}, []
    try:
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as zf:
            with _snapshot(using):
                for model in study_models():
                    label = model._meta.label_lower
                    member = data_member(label)
                    with zf.open(member, "w", force_zip64=True) as raw:
                        sink = HashingWriter(raw)
                        rows[label] = dump_model(
                            model, sink, natural_foreign_keys=label in NATURAL_FOREIGN_KEYS,
                            natural_primary_keys=label in MERGED_BY_NAME)
                        files[member] = sink.entry()
                    labels.append(label)
                media = media_names()
                migrations = database_state(using)
            # Files are copied after the snapshot closes: storage (maybe S3) can be slow, and
            # stored files are never rewritten in place (images are named by their content hash).
            for name in media:
                files[media_member(name)] = _copy_media(zf, name)
            manifest = manifest_lib.build(
                migrations=migrations, models=labels, rows=rows, files=files,
                software={"django": django.get_version(), "python": platform.python_version(),
                          "database": connections[using].vendor})
            zf.writestr(manifest_lib.MANIFEST, json.dumps(manifest, indent=1))
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return manifest
