"""Whole-study backup: ``export_study(path)`` writes every row of the annotation, judging and
agreement apps (plus users and groups) and the media files into one zip with a manifest;
``import_study(path)`` restores it into an empty, equally migrated database, all or nothing.
See ``contents`` for what is (and is not) in an archive."""
from .errors import BackupError
from .exporter import export_study
from .importer import import_study, reset_sequences
from .manifest import FORMAT_VERSION

__all__ = ["FORMAT_VERSION", "BackupError", "export_study", "import_study", "reset_sequences"]
