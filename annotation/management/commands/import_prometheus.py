"""python manage.py import_prometheus PATH"""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.content.imports.common import ImportFailed
from annotation.content.imports.prometheus import import_prometheus


class Command(BaseCommand):
    help = "Import Prometheus-Vision rubric prompts (jsonl), all rows or none."

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)

    def handle(self, *args, path, **opts):
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        try:
            summary = import_prometheus(path)
        except ImportFailed as exc:
            raise CommandError(f"{path}: {'; '.join(exc.messages)} (nothing was imported)") from exc
        self.stdout.write(f"{path.name}: {summary}")
