from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from judging.services.errors import ImportRejected
from judging.services.judgments.imports import judgments_import
from studies.commands import add_study_argument, study_option


class Command(BaseCommand):
    help = ("Import judgments: the generic CSV/JSONL (one judgment per row) or the VisIT-Bench "
            "human-preference CSV; all or nothing, unmatched rows reported; rows imported "
            "before (same import key) are skipped, so running it twice is safe.")

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--format", choices=["auto", "generic", "visitbench"], default="auto")
        parser.add_argument("--create-missing", action="store_true",
                            help="Create unknown instances, models and responses from the rows")
        parser.add_argument("--skip-unmatched", action="store_true")
        parser.add_argument("--dataset", help="The dataset the file's item ids belong to (rows "
                            "may say so in a 'dataset' column); created items get it as source")
        add_study_argument(parser)

    def handle(self, *args, **opts):
        study = study_option(opts)
        path = Path(opts["path"])
        try:
            report = judgments_import(path.name, path.read_bytes(), fmt=opts["format"],
                                      create_missing=opts["create_missing"],
                                      skip_unmatched=opts["skip_unmatched"],
                                      dataset=opts["dataset"], study=study)
        except (OSError, ImportRejected) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"{report.rows} judgments read: {report.created} created, "
                          f"{report.unchanged} skipped as already imported")
        if report.unmatched:
            self.stdout.write(f"{len(report.unmatched)} unmatched rows skipped:\n  "
                              + "\n  ".join(report.unmatched[:50]))
