"""python manage.py verification_report [--format table|json|csv] [--source NAME]"""
import json

from django.core.management.base import BaseCommand

from annotation.pipeline.report import COLUMNS, ROWS, table2_csv
from annotation.pipeline.selectors import verification_report


class Command(BaseCommand):
    help = "Verification outcomes as in VisIT-Bench Table 2 (overall / single / multi)."

    def add_arguments(self, parser):
        parser.add_argument("--format", choices=("table", "json", "csv"), default="table")
        parser.add_argument("--source", default=None,
                            help="Only instances from this source (visitbench, crowd, …)")

    def handle(self, *args, format, source, **opts):
        table = verification_report(source)
        if format == "json":
            self.stdout.write(json.dumps(table, indent=2))
        elif format == "csv":
            self.stdout.write(table2_csv(table), ending="")
        else:
            self.stdout.write(f"{'':32}" + "".join(f"{c:>10}" for c in COLUMNS))
            for key, label in ROWS:
                cells = ("—" if table[c][key] is None else f"{table[c][key]:.1f}" for c in COLUMNS)
                self.stdout.write(f"{label:32}" + "".join(f"{v:>10}" for v in cells))
            self.stdout.write(f"{'Instances rated':32}"
                              + "".join(f"{table[c]['n']:>10}" for c in COLUMNS))
