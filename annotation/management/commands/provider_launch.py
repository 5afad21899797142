from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotation.core.clients.errors import MarketplaceError
from annotation.management.batches import add_batch_argument, batch_option
from annotation.providers.costs import BudgetExceeded
from annotation.providers.selectors import batch_costs
from annotation.providers.services import batch_launch


class Command(BaseCommand):
    help = "Launch a batch on its provider (shows the estimate; resumes an interrupted launch)."

    def add_arguments(self, parser):
        add_batch_argument(parser)
        parser.add_argument("--estimate-only", action="store_true", help="Print the cost and stop")
        parser.add_argument("--confirm-production", action="store_true",
                            help="Required when MTURK_PRODUCTION=1: this spends real money")

    def handle(self, *args, **opts):
        batch = batch_option(opts)
        c = batch_costs(batch).estimate
        self.stdout.write(f"{batch.title} on {batch.provider}: rewards ${c.rewards} + fees "
                          f"${c.reward_fees} + bonuses ${c.bonuses + c.bonus_fees} = ${c.total}"
                          f" (budget {batch.budget if batch.budget is not None else 'none'})")
        if opts["estimate_only"]:
            return
        try:
            report = batch_launch(batch, actor="command",
                                  production_confirmed=opts["confirm_production"])
        except (MarketplaceError, BudgetExceeded, ValidationError) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Published {report.created} new, {report.reused} already there, "
                          f"of {report.total} units.")
