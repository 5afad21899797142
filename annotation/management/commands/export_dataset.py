"""python manage.py export_dataset --format visitbench|convbench|prometheus|jsonl --out PATH"""
from pathlib import Path

from django.core.management.base import BaseCommand

from annotation.content.exports import FORMATS, export_dataset
from studies.commands import add_study_argument, study_option


class Command(BaseCommand):
    help = "Export the benchmark in a source format (re-importable) or as a full JSONL dump."

    def add_arguments(self, parser):
        parser.add_argument("--format", choices=FORMATS, required=True)
        parser.add_argument("--out", type=Path, required=True)
        parser.add_argument("--layout", choices=("single", "multi"), default="multi",
                            help="VisIT-Bench CSV layout (default: multi)")
        parser.add_argument("--source", default=None,
                            help="Only instances from this source (visitbench, crowd, …)")
        add_study_argument(parser)

    def handle(self, *args, format, out, layout, source, **opts):
        study = study_option(opts)
        data = export_dataset(format, layout=layout, source=source, study=study)
        out.write_bytes(data)
        self.stdout.write(f"Wrote {len(data)} bytes to {out}")
