from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from judging.services.errors import ImportRejected
from judging.services.responses import predictions_import
from studies.commands import add_study_argument, study_option


class Command(BaseCommand):
    help = ("Import model predictions (VisIT-Bench submission CSV with '<model> prediction' "
            "columns, or JSONL); all or nothing, unmatched rows reported.")

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--model", help="Model name for JSONL rows without a 'model' key")
        parser.add_argument("--skip-unmatched", action="store_true",
                            help="Import the matched rows and only report the others")
        parser.add_argument("--overwrite", action="store_true",
                            help="Replace a stored response whose text differs")
        add_study_argument(parser)

    def handle(self, *args, **opts):
        study = study_option(opts)
        path = Path(opts["path"])
        try:
            report = predictions_import(path.name, path.read_bytes(), model=opts["model"],
                                        skip_unmatched=opts["skip_unmatched"],
                                        overwrite=opts["overwrite"], study=study)
        except (OSError, ImportRejected) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(report.as_text())
