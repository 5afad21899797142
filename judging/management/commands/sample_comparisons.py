from decimal import Decimal

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from judging.models import Comparison
from judging.services.active_comparisons import comparisons_sample_active
from judging.services.comparisons import (
    KINDS,
    SamplingError,
    comparison_batches_create,
    comparisons_sample,
    instances_filtered,
)
from studies.commands import add_study_argument, study_option


class Command(BaseCommand):
    help = ("Sample comparisons (uniform tuples, new model vs existing, or one active round of "
            "the most informative pairs) within a budget and, "
            "with --batch, put them in crowd batches with gold mixed in. The human-verified "
            "reference competes wherever an instance has one.")

    def add_arguments(self, parser):
        parser.add_argument("--mode", choices=["uniform", "new_model", "active"], default="uniform")
        parser.add_argument("--budget", type=int, help="Comparisons in an active round")
        parser.add_argument("--tuples", type=int, default=1000)
        parser.add_argument("--new-model")
        parser.add_argument("--models", nargs="*", help="Restrict to these models")
        parser.add_argument("--source", help="Only instances of this dataset (visitbench, …)")
        parser.add_argument("--kind", choices=KINDS, help="Only instances of this kind")
        parser.add_argument("--category", help="Only instances of this family / category")
        parser.add_argument("--max-comparisons", type=int)
        parser.add_argument("--max-cost", type=Decimal)
        parser.add_argument("--reward", type=Decimal, default=Decimal("0"))
        parser.add_argument("--n", type=int, default=5, help="Judgments per comparison")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--batch", help="Title of the batch(es) to create: one per page "
                            "kind when conversations and single turns are mixed")
        parser.add_argument("--gold-rate", type=float, default=0.0)
        parser.add_argument("--min-seconds", type=int, default=0)
        add_study_argument(parser)

    def handle(self, *args, **opts):
        opts["study"] = study_option(opts)
        try:
            with transaction.atomic():  # comparisons and their batches, or nothing
                self._run(opts)
        except SamplingError as exc:
            raise CommandError(str(exc)) from exc

    def _run(self, opts):
        study = opts["study"]
        instances = instances_filtered(source=opts["source"], kind=opts["kind"],
                                       category=opts["category"], study=study)
        if opts["mode"] == "active":
            made = comparisons_sample_active(
                budget=opts["budget"], models=opts["models"], instances=instances,
                max_comparisons=opts["max_comparisons"], max_cost=opts["max_cost"],
                reward=opts["reward"], judgments_per_comparison=opts["n"], seed=opts["seed"],
                study=study)
        else:
            made = comparisons_sample(
                mode=opts["mode"], tuples=opts["tuples"], new_model=opts["new_model"],
                models=opts["models"], instances=instances,
                max_comparisons=opts["max_comparisons"], max_cost=opts["max_cost"],
                reward=opts["reward"], judgments_per_comparison=opts["n"], seed=opts["seed"],
                study=study)
        self.stdout.write(f"Sampled {len(made)} comparisons ({opts['mode']}).")
        if opts["batch"]:
            gold = list(Comparison.objects.filter(instance__study=study).exclude(gold_choice="")
                        .select_related("instance"))
            batches = comparison_batches_create(
                comparisons=Comparison.objects.filter(
                    pk__in=[c.pk for c in made]).select_related("instance").order_by("pk"),
                title=opts["batch"], judgments_per_comparison=opts["n"],
                reward=opts["reward"], gold=gold, gold_rate=opts["gold_rate"],
                seed=opts["seed"], min_seconds=opts["min_seconds"], study=study)
            for batch in batches:
                self.stdout.write(f"Batch {batch.uuid} ({batch.hit_type}, {batch.title}): "
                                  f"{batch.tasks.count()} tasks.")
