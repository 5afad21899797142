import csv
import io
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotation.core.clients.errors import MarketplaceError
from annotation.models import Batch
from annotation.providers.costs import BudgetExceeded
from annotation.providers.services import bonus_rows_parse, worker_bonus


class Command(BaseCommand):
    help = ("Pay bonuses from a CSV (assignment,amount,reason[,key]); every row is checked "
            "first, and re-running pays nothing twice.")

    def add_arguments(self, parser):
        parser.add_argument("batch", help="Batch UUID")
        parser.add_argument("csv", type=Path)

    def handle(self, *args, **opts):
        batch = Batch.objects.filter(uuid=opts["batch"]).first()
        if batch is None:
            raise CommandError(f"No batch {opts['batch']}")
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
