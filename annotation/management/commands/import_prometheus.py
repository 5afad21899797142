"""python manage.py import_prometheus PATH"""
from pathlib import Path

from django.core.management.base import BaseCommand

from annotation.content.imports.prometheus import import_prometheus
from studies.commands import add_study_argument, study_option

from ._file_import import import_file


class Command(BaseCommand):
    help = "Import Prometheus-Vision rubric prompts (jsonl), all rows or none."

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        add_study_argument(parser)

    def handle(self, *args, path, **opts):
        study = study_option(opts)
        summary = import_file(path, lambda p: import_prometheus(p, study=study))
        self.stdout.write(f"{path.name}: {summary}")
