"""Start (or resume) a judge run and work it in this process with a progress bar."""
import sys
import time
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotation.core.jobs import JobsBusy
from judging.judges.commands import judge_option
from judging.judges.models import JudgeRun
from judging.judges.selectors import run_progress
from judging.judges.services import (
    default_items,
    judge_run_execute,
    judge_run_resume,
    judge_run_start,
)
from studies.commands import add_study_argument, study_option


class Command(BaseCommand):
    help = ("Run an automatic judge over comparisons (pairwise kinds) or responses (rubric, "
            "direct grading), or resume a run. Calls already made are never paid again.")

    def add_arguments(self, parser):
        parser.add_argument("--judge", help="Judge name")
        parser.add_argument("--judge-version", help="Judge version (default: the newest)")
        parser.add_argument("--items", nargs="*", default=[],
                            help="Comparison/response uuids (default: all that fit the judge)")
        parser.add_argument("--resume", metavar="RUN_UUID", help="Resume this run instead")
        parser.add_argument("--budget", type=Decimal, help="Hard cap on new spend")
        parser.add_argument("--concurrency", type=int, help="Lanes (default: the judge's)")
        parser.add_argument("--processes", type=int, default=1,
                            help="Split the lanes over this many processes (PostgreSQL only; "
                                 "use the number of CPUs for big runs)")
        parser.add_argument("--estimate-only", action="store_true")
        parser.add_argument("--quiet", action="store_true", help="No progress bar")
        parser.add_argument("--celery", action="store_true",
                            help="Queue the run on Celery workers and follow its progress")
        add_study_argument(parser)

    def handle(self, *args, **opts):
        try:
            run = self._resume(opts) if opts["resume"] else self._start(opts)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        except JobsBusy as exc:  # --celery: queued, so admitted by the job caps
            raise CommandError(exc.message) from exc
        if run is None:
            return
        bar = None if opts["quiet"] else self._bar
        if opts["celery"]:
            run = self._follow(run, bar)
        else:
            run = judge_run_execute(run, concurrency=opts["concurrency"],
                                    processes=opts["processes"], on_progress=bar)
        if bar:
            sys.stderr.write("\n")
        p = run_progress(run)
        self.stdout.write(f"run {run.uuid}: {p['status']} · {p['units_done']}/{p['units_total']}"
                          f" units · {p['units_failed']} failed · {p['calls_made']} calls made,"
                          f" {p['calls_cached']} cached · cost {p['cost']}")

    @staticmethod
    def _follow(run, bar):
        """The service queued the run (``dispatch``); watch it until it ends."""
        while True:
            run.refresh_from_db()
            if bar:
                bar(run)
            if run.status not in (JudgeRun.Status.PENDING, JudgeRun.Status.RUNNING) or (
                    run.units_done + run.units_failed >= run.units_total):
                return run
            time.sleep(1.0)

    def _start(self, opts):
        if not opts["judge"]:
            raise CommandError("give --judge NAME or --resume RUN_UUID")
        judge = judge_option(opts)
        study = study_option(opts)
        items = opts["items"] or default_items(judge, study)
        if opts["estimate_only"]:
            from judging.judges.services import judge_estimate

            e = judge_estimate(judge=judge, item_uuids=items, study=study)
            self.stdout.write(f"{e.units} units · {e.calls} new calls ({e.cached_calls} cached) "
                              f"· ~{e.prompt_tokens} in / {e.completion_tokens} out tokens · "
                              f"estimated cost {e.cost}")
            return None
        run = judge_run_start(judge=judge, item_uuids=items, budget=opts["budget"],
                              created_by="manage.py", dispatch=opts["celery"], study=study)
        self.stdout.write(f"run {run.uuid}: {run.units_total} units, estimated cost "
                          f"{run.estimated_cost}" + (f", budget {run.budget}" if run.budget
                                                     is not None else ""))
        return run

    def _resume(self, opts):
        run = JudgeRun.objects.filter(uuid=opts["resume"]).first()
        if run is None:
            raise CommandError(f"no run {opts['resume']}")
        return judge_run_resume(run, budget=opts["budget"], dispatch=opts["celery"])

    @staticmethod
    def _bar(run):
        p = run_progress(run)
        width = 30
        filled = int(width * p["percent"] / 100)
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {p['percent']:5.1f}% "
                         f"{p['units_done']}/{p['units_total']} failed {p['units_failed']} "
                         f"cost {p['cost']} {p['status']}   ")
        sys.stderr.flush()
