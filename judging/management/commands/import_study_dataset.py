"""python manage.py import_study_dataset DIR — the Parquet dataset back in, all or nothing."""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.content.imports.common import ImportFailed
from annotation.core.jobs import JobsBusy
from judging.dataset.imports import dataset_import
from studies.commands import add_study_argument, study_option


class Command(BaseCommand):
    help = "Import a study dataset written by export_study_dataset (rows already here are kept)."

    def add_arguments(self, parser):
        parser.add_argument("folder", type=Path)
        add_study_argument(parser)

    def handle(self, *args, folder, **opts):
        study = study_option(opts)
        try:
            added = dataset_import(folder, study=study)
        except ImportFailed as exc:
            raise CommandError(f"nothing imported: {'; '.join(exc.messages)}") from exc
        except JobsBusy as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write("added " + ", ".join(f"{n:,} {t}" for t, n in added.items()))
