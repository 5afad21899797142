"""What backup_study and restore_study share (Django lists no command for a module named with
a leading underscore): the archive's refusals and a full job queue as the command's error,
and the counts both report."""
from django.core.management.base import CommandError

from agreement.backup import BackupError
from annotation.core.jobs import JobsBusy


def run_archive(operation, path: str) -> tuple[dict, int, int]:
    """``operation(path)``'s manifest, its number of rows and its number of media files."""
    try:
        manifest = operation(path)
    except BackupError as exc:
        raise CommandError(str(exc)) from exc
    except JobsBusy as exc:
        raise CommandError(exc.message) from exc
    rows = sum(manifest["rows"].values())
    media = sum(1 for m in manifest["files"] if m.startswith("media/"))
    return manifest, rows, media
