"""python manage.py export_study_dataset --out DIR — Parquet tables + dataset card."""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.core.jobs import JobsBusy
from judging.dataset.export import dataset_export


class Command(BaseCommand):
    help = ("Write instances, models, responses, comparisons and judgments as Parquet, with a "
            "dataset card (README.md), into DIR.")

    def add_arguments(self, parser):
        parser.add_argument("--out", type=Path, required=True)

    def handle(self, *args, out, **opts):
        try:
            counts = dataset_export(out)
        except JobsBusy as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(", ".join(f"{n:,} {table}" for table, n in counts.items())
                          + f" → {out}")
