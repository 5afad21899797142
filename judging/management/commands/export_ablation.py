"""Write the ConvBench ablation conversations (with substituted history) as JSONL."""
import sys
from collections import Counter

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from judging.judges.ablation import CONDITIONS, export_jsonl


class Command(BaseCommand):
    help = "Export conversations under each ablation condition for models to answer (JSONL)."

    def add_arguments(self, parser):
        parser.add_argument("--conditions", nargs="*", default=CONDITIONS, choices=CONDITIONS)
        parser.add_argument("--out", help="File to write (default: stdout)")

    def handle(self, *args, **opts):
        skipped: Counter = Counter()
        try:
            if opts["out"]:
                with open(opts["out"], "w", encoding="utf-8") as fh:
                    n = export_jsonl(fh, conditions=opts["conditions"], skipped=skipped)
            else:
                n = export_jsonl(sys.stdout, conditions=opts["conditions"], skipped=skipped)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        self.stderr.write(f"{n} conversation(s) exported")
        for condition, count in sorted(skipped.items()):
            self.stderr.write(f"{condition}: {count} conversation(s) left out — a substituted "
                              "turn has no reference answer")
