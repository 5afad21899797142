"""python manage.py restore_study in.zip — restore a backup into an empty, migrated database."""
from django.core.management.base import BaseCommand

from agreement.backup import import_study

from ._archive import run_archive


class Command(BaseCommand):
    help = ("Restore a study archive made by backup_study. The database must be migrated to the "
            "archive's migration state and hold no study data; all or nothing.")

    def add_arguments(self, parser):
        parser.add_argument("path", help="Archive to read")

    def handle(self, *args, **opts):
        manifest, rows, media = run_archive(import_study, opts["path"])
        self.stdout.write(f"Restored {opts['path']} (made {manifest['created_at']}): {rows} "
                          f"rows, {media} media files.")
