"""Attempt the webhook deliveries whose retry time has come — what the Celery beat does every
30 s; without a broker, run it from cron."""
from django.core.management.base import BaseCommand

from annotation.webhooks.services import deliveries_retry_due


class Command(BaseCommand):
    help = "Attempt due webhook deliveries (retries with backoff)."

    def add_arguments(self, parser):
        parser.add_argument("--limit", type=int, default=100)

    def handle(self, *args, limit, **opts):
        self.stdout.write(f"attempted {deliveries_retry_due(limit)} delivery(ies)")
