"""The archive's ``manifest.json``: build it and check an untrusted one (pure, no Django).

It records the format and its version, when the archive was made, the migration state of every
app whose tables it holds, the load order and row count of every model, and the sha256 and size
of every other member.
"""
import datetime
import re

from .errors import BackupError

MANIFEST = "manifest.json"
FORMAT_NAME = "vlmeval-study-backup"
FORMAT_VERSION = 1
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def build(*, migrations: dict[str, list[str]], models: list[str], rows: dict[str, int],
          files: dict[str, dict], software: dict[str, str]) -> dict:
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "created_at": datetime.datetime.now(datetime.UTC).isoformat(),
        "software": software,
        "migrations": {app: list(names) for app, names in sorted(migrations.items())},
        "models": list(models),
        "rows": dict(rows),
        "files": {name: files[name] for name in sorted(files)},
    }


def _fail(msg: str):
    raise BackupError(f"Invalid archive manifest: {msg}")


def validate(manifest) -> dict:
    """Check structure and version of a parsed manifest; return it or raise BackupError."""
    if not isinstance(manifest, dict):
        _fail("not a JSON object")
    if manifest.get("format") != FORMAT_NAME:
        _fail(f"format is {manifest.get('format')!r}, expected {FORMAT_NAME!r}")
    version = manifest.get("version")
    if version != FORMAT_VERSION or isinstance(version, bool):
        raise BackupError(f"Unsupported archive format version {version!r}: this code reads "
                          f"version {FORMAT_VERSION} only.")
    migrations = manifest.get("migrations")
    if not isinstance(migrations, dict) or not all(
            isinstance(v, list) and all(isinstance(n, str) for n in v)
            for v in migrations.values()):
        _fail("'migrations' must map app labels to lists of migration names")
    models, rows = manifest.get("models"), manifest.get("rows")
    if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
        _fail("'models' must be a list of model labels")
    if len(set(models)) != len(models):
        _fail("'models' lists a model twice")
    if not isinstance(rows, dict) or set(rows) != set(models) or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in rows.values()):
        _fail("'rows' must give a non-negative count for every model in 'models'")
    files = manifest.get("files")
    if not isinstance(files, dict):
        _fail("'files' must map member names to their sha256 and size")
    for name, entry in files.items():
        if not (isinstance(entry, dict) and isinstance(entry.get("sha256"), str)
                and _SHA256.match(entry["sha256"]) and isinstance(entry.get("bytes"), int)):
            _fail(f"bad entry for member {name!r}")
    return manifest


def migration_differences(archive: dict[str, list[str]],
                          database: dict[str, list[str]]) -> list[str]:
    """Human-readable lines, one per app whose latest migrations differ (empty when equal)."""
    out = []
    for app in sorted(set(archive) | set(database)):
        a, d = sorted(archive.get(app, [])), sorted(database.get(app, []))
        if a != d:
            out.append(f"app {app!r}: archive at {', '.join(a) or '(none)'}, "
                       f"database at {', '.join(d) or '(none)'}")
    return out
