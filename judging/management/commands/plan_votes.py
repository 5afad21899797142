"""How many more human votes (and what cost) a target needs, with and without a judge;
``--create-batch`` makes the batch that does it (``judging.services.vote_plans``)."""
from decimal import Decimal, InvalidOperation

from django.core.management.base import BaseCommand, CommandError

from judging.planner import PlanError
from judging.services.comparisons import SamplingError
from judging.services.vote_plans import vote_plan, vote_plan_batch_create
from studies.commands import add_study_argument, study_option


class Command(BaseCommand):
    help = ("Plan the human votes a target needs: ci:W (every CI under W Elo points), "
            "separate:X,Y or topk:K; with --judge, also with that judge's verdicts (PPI).")

    def add_arguments(self, parser):
        add_study_argument(parser)
        parser.add_argument("--target", required=True, help="ci:W | separate:X,Y | topk:K")
        parser.add_argument("--judge", help="An automatic judge's source name")
        parser.add_argument("--votes", type=int, default=5, help="Votes per comparison")
        parser.add_argument("--reward", default="0", help="Reward per vote in dollars")
        parser.add_argument("--create-batch", metavar="TITLE", nargs="?", const="",
                            help="Sample the plan's comparisons into a batch (the judge's plan "
                                 "with --judge)")
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args, **opts):
        study = study_option(opts)
        try:
            reward = Decimal(opts["reward"])
        except InvalidOperation as exc:
            raise CommandError(f"--reward {opts['reward']!r} is not an amount") from exc
        common = dict(judge=opts["judge"], votes_per_comparison=opts["votes"], reward=reward)
        try:
            if opts["create_batch"] is None:
                result, batches = vote_plan(study, opts["target"], **common), []
            else:
                title = opts["create_batch"] or f"Plan: {opts['target']}"
                result, batches = vote_plan_batch_create(study, opts["target"], title=title,
                                                         seed=opts["seed"], **common)
        except (PlanError, SamplingError) as exc:
            raise CommandError(str(exc)) from exc
        self._report(result)
        for batch in batches:
            self.stdout.write(f"Batch {batch.uuid} ({batch.title}): {batch.tasks.count()} "
                              "tasks.")

    def _report(self, result):
        w = result.world
        self.stdout.write(f"{result.target}: {result.human_comparisons} comparisons voted on, "
                          f"{len(w.models)} models, worker noise (dispersion) "
                          f"{w.dispersion:.3f}")
        rows = [("human only", result.plans.human_only, result.human_cost)]
        if result.plans.with_judge is not None:
            rows.append((f"with {result.judge} (rho {w.rho:.2f})", result.plans.with_judge,
                         result.judge_cost))
        elif result.judge:
            self.stdout.write(f"{result.judge}: too few verdicts on voted comparisons to "
                              "measure its agreement; no judge plan")
        for label, plan, cost in rows:
            reach = "" if plan.reachable else " (out of reach with the free comparisons)"
            self.stdout.write(f"{label}: {plan.comparisons} more comparisons, "
                              f"{plan.comparisons * result.votes_per_comparison} votes, "
                              f"${cost.total:.2f}{reach}")
