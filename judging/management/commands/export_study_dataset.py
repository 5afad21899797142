"""python manage.py export_study_dataset --out DIR — Parquet tables + dataset card."""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.core.jobs import JobsBusy
from judging.dataset.export import dataset_export
from studies.commands import add_study_argument, study_option


class Command(BaseCommand):
    help = ("Write instances, models, responses, comparisons and judgments as Parquet, with a "
            "dataset card (README.md), into DIR.")

    def add_arguments(self, parser):
        parser.add_argument("--out", type=Path, required=True)
        add_study_argument(parser)

    def handle(self, *args, out, **opts):
        study = study_option(opts)
        try:
            counts = dataset_export(out, study=study)
        except JobsBusy as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(", ".join(f"{n:,} {table}" for table, n in counts.items())
                          + f" → {out}")
