from pathlib import Path

from django.core.management.base import BaseCommand

from judging.selectors import HUMAN
from judging.services.judgments.exports import judgments_export


class Command(BaseCommand):
    help = "Export judgments as generic CSV / JSONL or the VisIT-Bench human-preference CSV."

    def add_arguments(self, parser):
        parser.add_argument("--format", choices=["csv", "jsonl", "visitbench"], default="csv")
        parser.add_argument("--out", required=True, help="Output file ('-' for stdout)")
        parser.add_argument("--source", help=f"Only this judge ('{HUMAN}' or a judge name)")

    def handle(self, *args, **opts):
        text = judgments_export(opts["format"], source=opts["source"])
        if opts["out"] == "-":
            self.stdout.write(text, ending="")
        else:
            Path(opts["out"]).write_text(text, encoding="utf-8")
            self.stdout.write(f"Wrote {text.count(chr(10)) - (opts['format'] != 'jsonl')} "
                              f"judgments to {opts['out']}")
