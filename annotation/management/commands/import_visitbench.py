"""python manage.py import_visitbench PATH [--fetch-images]"""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.content.imports.common import ImportFailed
from annotation.content.imports.visitbench import import_visitbench
from annotation.core.background import wait_for_jobs
from annotation.pipeline.services import images_fetch_queue
from studies.commands import add_study_argument, study_option


class Command(BaseCommand):
    help = "Import a VisIT-Bench CSV (single- or multi-image layout), all rows or none."

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--fetch-images", action="store_true",
                            help="Queue downloads of pending image URLs after the import")
        add_study_argument(parser)

    def handle(self, *args, path, fetch_images, **opts):
        study = study_option(opts)
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        try:
            summary = import_visitbench(path, study=study)
        except ImportFailed as exc:
            raise CommandError(f"{path}: {'; '.join(exc.messages)} (nothing was imported)") from exc
        self.stdout.write(f"{path.name}: {summary}")
        if fetch_images:
            self.stdout.write(f"Queued {images_fetch_queue()} image downloads.")
            wait_for_jobs()  # without a broker the downloads are this process's threads
