"""python manage.py import_visitbench PATH [--fetch-images]"""
from pathlib import Path

from django.core.management.base import BaseCommand

from annotation.content.imports.visitbench import import_visitbench
from annotation.core.background import wait_for_jobs
from annotation.pipeline.services import images_fetch_queue
from studies.commands import add_study_argument, study_option

from ._file_import import import_file


class Command(BaseCommand):
    help = "Import a VisIT-Bench CSV (single- or multi-image layout), all rows or none."

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--fetch-images", action="store_true",
                            help="Queue downloads of pending image URLs after the import")
        add_study_argument(parser)

    def handle(self, *args, path, fetch_images, **opts):
        study = study_option(opts)
        summary = import_file(path, lambda p: import_visitbench(p, study=study))
        self.stdout.write(f"{path.name}: {summary}")
        if fetch_images:
            self.stdout.write(f"Queued {images_fetch_queue()} image downloads.")
            wait_for_jobs()  # without a broker the downloads are this process's threads
