"""python manage.py backup_study out.zip — the whole study (rows, users, media) in one archive."""
from django.core.management.base import BaseCommand, CommandError

from agreement.backup import BackupError, export_study
from annotation.core.jobs import JobsBusy


class Command(BaseCommand):
    help = ("Export the study: every row of annotation, judging and agreement, the users and "
            "groups, and the media files, into a zip with a manifest (sha256 per member).")

    def add_arguments(self, parser):
        parser.add_argument("path", help="Archive to write (replaced if it exists)")

    def handle(self, *args, **opts):
        try:
            manifest = export_study(opts["path"])
        except BackupError as exc:
            raise CommandError(str(exc)) from exc
        except JobsBusy as exc:
            raise CommandError(exc.message) from exc
        rows = sum(manifest["rows"].values())
        media = sum(1 for m in manifest["files"] if m.startswith("media/"))
        self.stdout.write(f"Wrote {opts['path']}: {rows} rows of {len(manifest['rows'])} "
                          f"models, {media} media files.")
