import uuid
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.engine.results import FORMATS, UnknownFormat, check_format, results_write
from annotation.models import Batch
from studies.commands import add_study_argument, study_option


class Command(BaseCommand):
    help = "Write a batch's results (one row per assignment) as CSV, JSONL or Parquet."

    def add_arguments(self, parser):
        parser.add_argument("--batch", required=True, help="The batch's uuid")
        parser.add_argument("--format", required=True, help=f"One of {', '.join(FORMATS)}")
        parser.add_argument("--out", required=True, type=Path, help="File to write")
        add_study_argument(parser)

    def handle(self, *args, **opts):
        study = study_option(opts)
        try:
            fmt = check_format(opts["format"])
            batch = Batch.objects.filter(uuid=uuid.UUID(opts["batch"]), study=study).first()
        except UnknownFormat as exc:
            raise CommandError(str(exc)) from exc
        except ValueError:
            raise CommandError(f"Not a batch uuid: {opts['batch']!r}") from None
        if batch is None:
            raise CommandError(f"No batch with uuid {opts['batch']} in study {study.slug!r}")
        out: Path = opts["out"]
        if not out.parent.is_dir():
            raise CommandError(f"No such directory: {out.parent}")
        with out.open("wb") as handle:
            results_write([batch], fmt, handle)
        self.stdout.write(f"Wrote {batch.assignments.count()} assignment(s) to {out}.")
