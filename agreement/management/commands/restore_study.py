"""python manage.py restore_study in.zip — restore a backup into an empty, migrated database."""
from django.core.management.base import BaseCommand, CommandError

from agreement.backup import BackupError, import_study
from annotation.core.jobs import JobsBusy


class Command(BaseCommand):
    help = ("Restore a study archive made by backup_study. The database must be migrated to the "
            "archive's migration state and hold no study data; all or nothing.")

    def add_arguments(self, parser):
        parser.add_argument("path", help="Archive to read")

    def handle(self, *args, **opts):
        try:
            manifest = import_study(opts["path"])
        except BackupError as exc:
            raise CommandError(str(exc)) from exc
        except JobsBusy as exc:
            raise CommandError(exc.message) from exc
        rows = sum(manifest["rows"].values())
        media = sum(1 for m in manifest["files"] if m.startswith("media/"))
        self.stdout.write(f"Restored {opts['path']} (made {manifest['created_at']}): {rows} "
                          f"rows, {media} media files.")
