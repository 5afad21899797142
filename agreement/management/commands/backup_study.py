"""python manage.py backup_study out.zip — the whole study (rows, users, media) in one archive."""
from django.core.management.base import BaseCommand

from agreement.backup import export_study

from ._archive import run_archive


class Command(BaseCommand):
    help = ("Export the study: every row of annotation, judging and agreement, the users and "
            "groups, and the media files, into a zip with a manifest (sha256 per member).")

    def add_arguments(self, parser):
        parser.add_argument("path", help="Archive to write (replaced if it exists)")

    def handle(self, *args, **opts):
        manifest, rows, media = run_archive(export_study, opts["path"])
        self.stdout.write(f"Wrote {opts['path']}: {rows} rows of {len(manifest['rows'])} "
                          f"models, {media} media files.")
