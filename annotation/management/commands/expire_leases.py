from django.core.management.base import BaseCommand

from annotation.engine.services.leases import leases_expire


class Command(BaseCommand):
    help = "Expire leases past their deadline and free their slots (also runs on Celery beat)."

    def handle(self, *args, **options):
        self.stdout.write(f"Expired {leases_expire()} leases.")
