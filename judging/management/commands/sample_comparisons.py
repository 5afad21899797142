from decimal import Decimal

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from judging.models import Comparison
from judging.services.comparisons import (
    SamplingError,
    comparison_batch_create,
    comparisons_sample,
)


class Command(BaseCommand):
    help = ("Sample comparisons (uniform tuples or new model vs existing) within a budget and, "
            "with --batch, put them in a crowd batch with gold mixed in.")

    def add_arguments(self, parser):
        parser.add_argument("--mode", choices=["uniform", "new_model"], default="uniform")
        parser.add_argument("--tuples", type=int, default=1000)
        parser.add_argument("--new-model")
        parser.add_argument("--models", nargs="*", help="Restrict to these models")
        parser.add_argument("--max-comparisons", type=int)
        parser.add_argument("--max-cost", type=Decimal)
        parser.add_argument("--reward", type=Decimal, default=Decimal("0"))
        parser.add_argument("--n", type=int, default=5, help="Judgments per comparison")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--batch", help="Title of a batch to create from the comparisons")
        parser.add_argument("--gold-rate", type=float, default=0.0)
        parser.add_argument("--min-seconds", type=int, default=0)

    def handle(self, *args, **opts):
        try:
            with transaction.atomic():  # comparisons and their batch, or nothing
                self._run(opts)
        except SamplingError as exc:
            raise CommandError(str(exc)) from exc

    def _run(self, opts):
        made = comparisons_sample(
            mode=opts["mode"], tuples=opts["tuples"], new_model=opts["new_model"],
            models=opts["models"], max_comparisons=opts["max_comparisons"],
            max_cost=opts["max_cost"], reward=opts["reward"],
            judgments_per_comparison=opts["n"], seed=opts["seed"])
        self.stdout.write(f"Sampled {len(made)} comparisons ({opts['mode']}).")
        if opts["batch"]:
            gold = list(Comparison.objects.exclude(gold_choice="").select_related("instance"))
            batch = comparison_batch_create(
                comparisons=Comparison.objects.filter(
                    pk__in=[c.pk for c in made]).select_related("instance"),
                title=opts["batch"], judgments_per_comparison=opts["n"],
                reward=opts["reward"], gold=gold, gold_rate=opts["gold_rate"],
                seed=opts["seed"], min_seconds=opts["min_seconds"])
            self.stdout.write(f"Batch {batch.uuid}: {batch.tasks.count()} tasks.")
