"""python manage.py import_dataset PATH"""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.content.imports.common import ImportFailed
from annotation.content.imports.jsonl_dump import import_jsonl_dump
from studies.commands import add_study_argument, study_option


class Command(BaseCommand):
    help = ("Import a full JSONL dump written by `export_dataset --format jsonl`, all lines or "
            "none; instances already present (same UUID or source id) are skipped.")

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        add_study_argument(parser)

    def handle(self, *args, path, **opts):
        study = study_option(opts)
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        try:
            summary = import_jsonl_dump(path, study=study)
        except ImportFailed as exc:
            raise CommandError(f"{path}: {'; '.join(exc.messages)} (nothing was imported)") from exc
        self.stdout.write(f"{path.name}: {summary}")
