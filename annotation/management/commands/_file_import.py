"""What the dataset import commands share (Django lists no command for a module named with a
leading underscore): the file must exist, and a refused import names the file and says that
nothing was imported."""
from pathlib import Path

from django.core.management.base import CommandError

from annotation.content.imports.common import ImportFailed


def import_file(path: Path, load):
    """``load(path)``'s summary, all rows or none; a missing file or a refusal as CommandError."""
    if not path.is_file():
        raise CommandError(f"{path}: no such file")
    try:
        return load(path)
    except ImportFailed as exc:
        raise CommandError(f"{path}: {'; '.join(exc.messages)} (nothing was imported)") from exc
