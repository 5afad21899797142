from django.core.management.base import BaseCommand, CommandError

from annotation.engine.services.completion import batches_finish_completed
from annotation.models import Batch
from annotation.providers.services import batch_sync, local_auto_approve, qualification_push


class Command(BaseCommand):
    help = "Sync submissions of launched batches (all of them when no UUID is given)."

    def add_arguments(self, parser):
        parser.add_argument("batches", nargs="*", help="Batch UUIDs")

    def handle(self, *args, **opts):
        batches = Batch.objects.exclude(provider="local")
        if opts["batches"]:
            batches = batches.filter(uuid__in=opts["batches"])
            if batches.count() != len(set(opts["batches"])):
                raise CommandError("Unknown batch UUID, or a local batch (nothing to sync)")
        for batch in batches.filter(provider_hits__isnull=False).distinct():
            r = batch_sync(batch, actor="command")
            self.stdout.write(f"{batch.title}: seen {r.seen}, matched {r.matched}, flagged "
                              f"{r.flagged}, approved {r.approved}, rejected {r.rejected}")
            for error in r.errors:
                self.stderr.write(f"  {error}")
        self.stdout.write(f"Qualifications pushed: {qualification_push(actor='command')}")
        # Local batches follow MTurk's auto-approval delay too; without beat, this runs it.
        self.stdout.write(f"Local work auto-approved: {local_auto_approve(actor='command')}")
        self.stdout.write(f"Batches finished (all work done): {batches_finish_completed()}")
