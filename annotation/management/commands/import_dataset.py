"""python manage.py import_dataset PATH"""
from pathlib import Path

from django.core.management.base import BaseCommand

from annotation.content.imports.jsonl_dump import import_jsonl_dump
from studies.commands import add_study_argument, study_option

from ._file_import import import_file


class Command(BaseCommand):
    help = ("Import a full JSONL dump written by `export_dataset --format jsonl`, all lines or "
            "none; instances already present (same UUID or source id) are skipped.")

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        add_study_argument(parser)

    def handle(self, *args, path, **opts):
        study = study_option(opts)
        summary = import_file(path, lambda p: import_jsonl_dump(p, study=study))
        self.stdout.write(f"{path.name}: {summary}")
