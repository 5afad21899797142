"""Print ConvBench Table 1 (pairwise judge) or Table 8 (direct-grading judge) per model."""
import json

from django.core.management.base import BaseCommand, CommandError

from judging.judges.ablation import ablation_summary, ablation_table
from judging.judges.commands import judge_option
from judging.judges.table import COLUMNS, HEADERS, format_row


class Command(BaseCommand):
    help = "ConvBench hierarchical-ablation table from a judge's stored verdicts."

    def add_arguments(self, parser):
        parser.add_argument("--judge", required=True)
        parser.add_argument("--judge-version")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **opts):
        judge = judge_option(opts)
        if not judge.spec.ablation:
            raise CommandError("the ablation table needs a multi-turn or direct-grading judge")
        if opts["json"]:
            self.stdout.write(json.dumps(ablation_summary(judge), indent=2))
            return
        unit = "win rate vs reference, %" if judge.is_pairwise else "mean grade 0-10"
        self.stdout.write(f"{judge.ident} ({unit})")
        self.stdout.write("\t".join(["Model", *(HEADERS[c] for c in COLUMNS)]))
        for model, row in ablation_table(judge):
            self.stdout.write("\t".join(format_row(model, row)))
