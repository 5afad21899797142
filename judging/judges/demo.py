"""Demo judges, one of each kind that names one (``JudgeKind.demo_name``), run over the demo
study against a STAND-IN judge server.

The stand-in is the bundled loopback OpenAI-compatible server (``tests/support/fake_openai.py``):
its verdicts come from a hash of the prompt and say nothing about answer quality; they only show
the pipeline (orderings, parsing, extraction, costs, leaderboards, the ablation table) working.
Point a judge at a real endpoint by editing its base URL / model / API-key env var in the admin
and bumping its version.

``extend_demo(rnd)`` compares the demo's ablation models (``judging.demo``: conversations answered
under the three ConvBench conditions) with the reference conversation, creates the judges, and
runs them when the stand-in (or ``DEMO_JUDGE_BASE_URL``) is reachable; otherwise it starts the
stand-in in-process for the duration of the call. Safe to call again: judges are reused and a
judge with a finished run is not run again.
"""
import os
import random
from decimal import Decimal

import httpx
from django.db import transaction

from annotation.models import Instance

from ..demo import ABLATION_MODELS, CONVERSATION_SOURCE
from ..models import Comparison, Response
from ..services.comparisons import comparison_new
from ..services.responses import reference_model
from .kinds import all_kinds
from .models import Judge, JudgeRun
from .services import default_items, judge_run_execute, judge_run_start

STAND_IN_URL = "http://127.0.0.1:8765/v1"
STAND_IN_NOTE = ("STAND-IN judge: a bundled loopback server whose verdicts are derived from a "
                 "hash of the prompt (tests/support/fake_openai.py). Not a real model.")
# make demo opens submissions against this one (scripts/demo.sh sets SUBMISSION_JUDGE): it
# compares a submitted answer with the verified reference, as VisIT-Bench's evaluation does.
SUBMISSION_JUDGE = "Stand-in reference-backed judge"


def _reachable(base_url: str) -> bool:
    try:
        return httpx.get(base_url.rstrip("/") + "/models", timeout=0.5).status_code == 200
    except httpx.HTTPError:
        return False


@transaction.atomic
def _ablation_comparisons(rnd: random.Random) -> int:
    """Each ablation model's conversation under every ConvBench condition against the human
    reference conversation, sides drawn at random like every other comparison (created once)."""
    reference = reference_model()
    made = []
    for instance in Instance.objects.filter(source=CONVERSATION_SOURCE).order_by("pk"):
        anchor = Response.objects.filter(instance=instance, model=reference, turn=1,
                                         condition=Response.Condition.GENERATED).first()
        if anchor is None or Comparison.objects.filter(instance=instance,
                                                       sampling="ablation").exists():
            continue
        for mine in Response.objects.filter(instance=instance, model__name__in=ABLATION_MODELS,
                                            turn=1).order_by("model__name", "condition"):
            made.append(comparison_new(instance.pk, mine, anchor, rnd, "ablation"))
    return len(Comparison.objects.bulk_create(made))


def _judges(base_url: str) -> list[Judge]:
    judges = []
    for kind in all_kinds():
        if not kind.demo_name:
            continue
        judge, _ = Judge.objects.get_or_create(name=kind.demo_name, version="demo-1", defaults={
            "kind": kind.slug, "base_url": base_url, "model_name": "fake-judge-stand-in",
            "max_tokens": 512, "concurrency": 4, "k": 1, "notes": STAND_IN_NOTE,
            "send_images": kind.demo_sends_images,
            "price_in_per_1k": Decimal("0.0025"), "price_out_per_1k": Decimal("0.01")})
        judges.append(judge)
    return judges


def extend_demo(rnd: random.Random) -> dict:
    """Create the demo judges and run them; returns a summary for the demo loader."""
    ablation = _ablation_comparisons(rnd)
    base_url = os.environ.get("DEMO_JUDGE_BASE_URL", STAND_IN_URL)
    judges = _judges(base_url)
    # a judge with a finished run is not run again: a second load adds nothing
    pending = [(judge, items) for judge in judges
               if (items := default_items(judge))
               and not judge.runs.filter(status=JudgeRun.Status.DONE).exists()]
    summary = {"judges": len(judges), "runs": {}, "ablation_comparisons": ablation,
               "stand_in": base_url == STAND_IN_URL, "note": STAND_IN_NOTE}
    if not pending:
        return summary
    server = None
    if not _reachable(base_url):
        if base_url != STAND_IN_URL:
            return {**summary, "runs": 0,
                    "note": f"judge server {base_url} unreachable; runs skipped"}
        from tests.support.fake_openai import FakeOpenAIServer

        server = FakeOpenAIServer(port=8765).start()
    try:
        for judge, items in pending:
            run = judge_run_execute(judge_run_start(judge=judge, item_uuids=items,
                                                    created_by="demo", dispatch=False))
            summary["runs"][judge.name] = (run.status, run.units_done, run.units_failed)
    finally:
        if server is not None:
            server.stop()
    return summary
