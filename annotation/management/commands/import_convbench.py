"""python manage.py import_convbench PATH --images DIR"""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.content.imports.convbench import import_convbench
from studies.commands import add_study_argument, study_option

from ._file_import import import_file


class Command(BaseCommand):
    help = "Import the ConvBench workbook; images are matched by image_id in --images."

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--images", type=Path, default=None,
                            help="Folder holding the images, named by image_id")
        add_study_argument(parser)

    def handle(self, *args, path, images, **opts):
        study = study_option(opts)

        def load(workbook):
            if images is not None and not images.is_dir():  # checked after the file, as before
                raise CommandError(f"{images}: no such folder")
            return import_convbench(workbook, images, study=study)

        summary = import_file(path, load)
        self.stdout.write(f"{path.name}: {summary}")
