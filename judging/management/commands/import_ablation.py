"""Read a model's answers to the exported ablation conversations back (all or nothing)."""
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from judging.judges.ablation import ablation_comparisons, import_responses
from judging.models import EvalModel


class Command(BaseCommand):
    help = "Import a model's JSONL answers; optionally create its comparisons vs the reference."

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--model", required=True, help="Model name (created if new)")
        parser.add_argument("--comparisons", action="store_true",
                            help="Also create the comparisons against the human reference")

    def handle(self, *args, **opts):
        try:
            with open(opts["path"], encoding="utf-8") as fh:
                n = import_responses(model_name=opts["model"], lines=fh)
        except (OSError, ValidationError) as exc:
            raise CommandError(str(getattr(exc, "messages", [exc])[0])) from exc
        self.stdout.write(f"{n} conversation(s) stored for {opts['model']}")
        if opts["comparisons"]:
            made = ablation_comparisons(model=EvalModel.objects.in_study().get(name=opts["model"]))
            self.stdout.write(f"{len(made)} comparison(s) against the reference ready to judge")
