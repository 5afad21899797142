"""python manage.py block_unreliable --batch <uuid> [--dry-run]"""
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from agreement.services.worker_reliability import block_unreliable_workers
from annotation.engine.selectors_workers import worker_display
from annotation.models import Batch


class Command(BaseCommand):
    help = ("Block the batch's workers whose Dawid–Skene accuracy is below the batch's "
            "auto_block_reliability_below even at its upper 95% bound "
            "(at least AUTO_BLOCK_RELIABILITY_MIN_VOTES votes).")

    def add_arguments(self, parser):
        parser.add_argument("--batch", required=True, help="The batch's UUID")
        parser.add_argument("--dry-run", action="store_true",
                            help="List the workers it would block; block nobody")

    def handle(self, *args, **o):
        try:
            batch = Batch.objects.get(uuid=o["batch"])
        except (Batch.DoesNotExist, ValidationError, ValueError) as exc:
            raise CommandError(f"no batch with UUID {o['batch']!r}") from exc
        try:
            picked = block_unreliable_workers(batch, dry_run=o["dry_run"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        for u in picked:
            low, high = u.estimate.ci
            state = ("would block" if o["dry_run"] else
                     "blocked" if u.blocked else "already blocked")
            self.stdout.write(f"{state}: {worker_display(u.worker)} — accuracy "
                              f"{u.estimate.accuracy:.0%} ({low:.0%}–{high:.0%}), "
                              f"{u.estimate.n_votes} votes")
        self.stdout.write(f"{len(picked)} worker(s) below "
                          f"{batch.auto_block_reliability_below:.0%} in batch {batch.title}"
                          + (" (dry run: nothing changed)" if o["dry_run"] else ""))
