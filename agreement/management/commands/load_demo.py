"""Loads the whole demo study. It lives in `agreement`, the last app, because it strings
together every app's demo: the crowd and leaderboards (judging), the construction pipeline
(annotation), the automatic judges and the agreement report. Safe to run twice."""
import random
import time

from django.core.management.base import BaseCommand

from agreement.demo import extend_demo as agreement_demo
from annotation.pipeline.demo import extend_demo as pipeline_demo
from judging.demo import DEMO_PASSWORD, load_demo
from judging.judges.demo import extend_demo as judges_demo


class Command(BaseCommand):
    help = "Load the demo study (idempotent) and print the logins."

    def add_arguments(self, parser):
        parser.add_argument("--seed", type=int, default=7)

    def handle(self, *args, **opts):
        started = time.monotonic()
        rnd = random.Random(opts["seed"])
        result = load_demo(seed=opts["seed"])
        if result["created"]:
            self.stdout.write(f"Crowd: {result['comparisons']} comparisons, "
                              f"{result['submitted']} simulated submissions in "
                              f"{len(result['batches'])} batches.")
        pipeline = pipeline_demo(rnd)
        if pipeline.get("created"):
            self.stdout.write(f"Pipeline: instances per stage {pipeline['stages']}")
        judges = judges_demo(rnd)
        self.stdout.write(f"Judges: {judges.get('judges')} judges, {judges.get('runs')} runs"
                          + (f" ({judges['note']})" if judges.get("note") else ""))
        report = agreement_demo(rnd)
        self.stdout.write(f"Agreement report: {report.get('report')}")
        logins = ", ".join(result["users"])
        self.stdout.write(f"Logins (password for all: {DEMO_PASSWORD}): {logins}")
        self.stdout.write(f"Demo loaded in {time.monotonic() - started:.1f} s.")
