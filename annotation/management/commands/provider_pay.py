import csv
import io
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotation.core.clients.errors import MarketplaceError
from annotation.management.batches import add_batch_argument, batch_option
from annotation.providers.costs import BudgetExceeded
from annotation.providers.services import bonus_rows_parse, worker_bonus


class Command(BaseCommand):
    help = ("Pay bonuses from a CSV (assignment,amount,reason[,key]); every row is checked "
            "first, and re-running pays nothing twice.")

    def add_arguments(self, parser):
        add_batch_argument(parser)
        parser.add_argument("csv", type=Path)

    def handle(self, *args, **opts):
        batch = batch_option(opts)
        if not opts["csv"].is_file():
            raise CommandError(f"No such file: {opts['csv']}")
        text = opts["csv"].read_text(encoding="utf-8-sig")
        try:
            rows = bonus_rows_parse(batch, list(csv.DictReader(io.StringIO(text))))
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        for row in rows:
            try:
                bonus = worker_bonus(row.assignment, amount=row.amount, reason=row.reason,
                                     key=row.key, actor="command")
            except (MarketplaceError, BudgetExceeded, ValidationError) as exc:
                raise CommandError(f"{row.assignment.uuid}: {exc}") from exc
            self.stdout.write(f"{bonus.worker.external_id}: ${bonus.amount} {bonus.status}")
