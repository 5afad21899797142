"""python manage.py agreement_report --out DIR [--judges a,b] [--split all] [--seed N]"""
from django.core.management.base import BaseCommand, CommandError

from agreement.services.metric_scores import DEFAULT_METRICS
from agreement.services.reports import report_generate, report_write_dir
from studies.commands import add_study_argument, study_option


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


class Command(BaseCommand):
    help = ("Build an agreement report (judges and metrics vs humans) and write report.html, "
            "report.json, one CSV per table and PNG/SVG plots to --out.")

    def add_arguments(self, parser):
        parser.add_argument("--out", required=True, help="Output directory")
        parser.add_argument("--judges", type=_csv, default=None,
                            help="Comma-separated judge names (default: every judge)")
        parser.add_argument("--split", default="all",
                            help="all, single, multi, overall, turn:1..3, category:<name>")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--metrics", type=_csv, default=list(DEFAULT_METRICS),
                            help="Comma-separated metrics ('' for none)")
        parser.add_argument("--bootstrap", type=int, default=1000, help="Bootstrap rounds")
        parser.add_argument("--exclude-blocked", action="store_true")
        parser.add_argument("--include-trial", action="store_true",
                            help="count the votes of trial batches (left out by default)")
        parser.add_argument("--aggregation", default="majority",
                            help="human labels the headline accuracy is against: majority, "
                                 "dawid-skene or mace (both are reported)")
        parser.add_argument("--judge-family", action="append", default=[],
                            metavar="JUDGE=FAMILY", help="For self-preference (repeatable)")
        parser.add_argument("--title", default="")
        add_study_argument(parser)

    def handle(self, *args, **o):
        study = study_option(o)
        try:
            families = dict(item.split("=", 1) for item in o["judge_family"])
        except ValueError:
            raise CommandError("--judge-family takes JUDGE=FAMILY") from None
        params = {"judges": o["judges"], "split": o["split"], "seed": o["seed"],
                  "metrics": o["metrics"], "bootstrap_rounds": o["bootstrap"],
                  "exclude_blocked": o["exclude_blocked"], "include_trial": o["include_trial"],
                  "aggregation": o["aggregation"], "judge_families": families}
        try:
            report = report_generate(params, title=o["title"], created_by="manage.py",
                                     study=study)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        paths = report_write_dir(report, o["out"])
        counts = report.snapshot["counts"]
        kinds = ", ".join(f"{n} {kind}" for kind, n in counts["judgments_by_kind"].items() if n)
        self.stdout.write(f"Report {report.uuid}: {counts['items']} compared items, "
                          f"{counts['graded_responses']} graded responses, "
                          f"{counts['judgments_used']} judgments ({kinds or 'none'}); "
                          f"{len(paths)} files in {o['out']}")
