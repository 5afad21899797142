import json
from decimal import Decimal
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotation.engine.services.batches import batch_create_from_rows, rows_from_upload
from studies.commands import add_study_argument, study_option


class Command(BaseCommand):
    help = "Create a batch from a CSV or JSONL file (one task per row; all or nothing)."

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--hit-type", required=True)
        parser.add_argument("--title", required=True)
        parser.add_argument("--n", type=int, default=5, help="Assignments per task")
        parser.add_argument("--reward", type=Decimal, default=Decimal("0"))
        parser.add_argument("--lease-seconds", type=int, default=1800)
        parser.add_argument("--min-seconds", type=int, default=None,
                            help="Answers faster than this are refused (default: the HIT "
                                 "type's, a share of its expected time; 0: any speed)")
        parser.add_argument("--hit-options", type=json.loads, default=None,
                            help='The HIT type\'s per-batch settings as JSON, e.g. '
                                 '\'{"answers": "ab_tie"}\'')
        parser.add_argument("--instructions", default="")
        add_study_argument(parser)

    def handle(self, *args, **opts):
        path: Path = opts["path"]
        study = study_option(opts)
        if not path.is_file():
            raise CommandError(f"No such file: {path}")
        try:
            batch = batch_create_from_rows(
                hit_type=opts["hit_type"], title=opts["title"],
                rows=rows_from_upload(path.name, path.read_bytes()),
                assignments_per_task=opts["n"], reward=opts["reward"],
                lease_seconds=opts["lease_seconds"], min_seconds=opts["min_seconds"],
                instructions=opts["instructions"], hit_options=opts["hit_options"], study=study,
            )
        except (ValidationError, LookupError) as exc:
            raise CommandError("; ".join(getattr(exc, "messages", [str(exc)]))) from exc
        self.stdout.write(f"Created batch {batch.uuid} with {batch.tasks.count()} tasks "
                          f"(minimum {batch.min_seconds} s per task).")
        if batch.min_seconds == 0:
            self.stderr.write("Minimum seconds is 0: answers of any speed are accepted.")
