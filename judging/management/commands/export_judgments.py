from pathlib import Path

from django.core.management.base import BaseCommand

from judging.selectors import HUMAN
from judging.services.judgments.exports import judgments_export
from studies.commands import add_study_argument, study_option


class Command(BaseCommand):
    help = "Export judgments as generic CSV / JSONL or the VisIT-Bench human-preference CSV."

    def add_arguments(self, parser):
        parser.add_argument("--format", choices=["csv", "jsonl", "visitbench"], default="csv")
        parser.add_argument("--out", required=True, help="Output file ('-' for stdout)")
        parser.add_argument("--source", help=f"Only this judge ('{HUMAN}' or a judge name)")
        add_study_argument(parser)

    def handle(self, *args, **opts):
        study = study_option(opts)
        text = judgments_export(opts["format"], source=opts["source"], study=study)
        if opts["out"] == "-":
            self.stdout.write(text, ending="")
        else:
            Path(opts["out"]).write_text(text, encoding="utf-8")
            self.stdout.write(f"Wrote {text.count(chr(10)) - (opts['format'] != 'jsonl')} "
                              f"judgments to {opts['out']}")
