from django.core.management.base import BaseCommand, CommandError

from annotation.core.clients.errors import MarketplaceError
from annotation.management.batches import add_batch_argument, batch_option
from annotation.providers.services import workers_notify


class Command(BaseCommand):
    help = ("Message every marketplace worker who worked on a batch (MTurk NotifyWorkers), "
            "e.g. to announce a follow-up batch.")

    def add_arguments(self, parser):
        add_batch_argument(parser)
        parser.add_argument("--subject", required=True)
        parser.add_argument("--message", required=True)

    def handle(self, *args, **opts):
        batch = batch_option(opts, marketplace_only=True)
        subject, message = opts["subject"].strip(), opts["message"].strip()
        if not subject or not message:
            raise CommandError("A subject and a message are required.")
        try:
            failed = workers_notify(batch, subject=subject, message=message, actor="command")
        except MarketplaceError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Notified the workers of “{batch.title}”"
                          + (f"; not reached: {', '.join(failed)}" if failed else "."))
