"""Judge runs: start, estimate, resume, cancel, and the work loop every executor runs.

One entry point per operation (views, API, admin actions, commands and Celery tasks call these).
Execution model: a run is a set of units (item × ordering). ``judge_run_work`` is a *lane*: it
claims the next pending unit atomically, judges it through ``plans.run_unit`` with a
``LiveCaller`` and repeats. A run with concurrency c is worked by c lanes, either c Celery tasks
(``tasks.py``) or c threads (``judge_run_execute``, used by the command and the benchmark), so the
concurrency limit and the code path are the same in both.
"""
from __future__ import annotations

import hashlib
import logging
import multiprocessing
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from decimal import Decimal
from functools import cache

from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.db import close_old_connections, connection, connections, transaction
from django.db.models import Count, Exists, F, Sum
from django.utils import timezone

from annotation.core.background import run_outside_request
from annotation.models import Instance
from annotation.webhooks.services import webhook_emit
from judging.parsers import combine_orderings

from ..models import Comparison, Judgment, Response
from ..services.judgments.record import judgments_record
from .calls import CallFailed, EstimatingCaller, LiveCaller, RunHalted, close_clients
from .models import Judge, JudgeCall, JudgeRun, JudgeUnit, validate_judge_name
from .plans import PlanError, load_item, run_unit

log = logging.getLogger(__name__)
ORDERINGS = ("AB", "BA")


@dataclass(frozen=True)
class Estimate:
    units: int
    calls: int  # new paid calls (extraction fallbacks not included: unknown in advance)
    cached_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost: Decimal


# ---------------------------------------------------------------- items


def _scope_for(judge: Judge, items: list) -> str:
    if judge.is_pairwise:
        return JudgeRun.Scope.COMPARISONS
    kinds = {r.instance.kind for r in items}
    if kinds == {Instance.Kind.CONVERSATION}:
        return JudgeRun.Scope.CONVERSATIONS
    return JudgeRun.Scope.RESPONSES


def resolve_items(judge: Judge, item_uuids) -> list:
    """The comparisons (pairwise kinds) or responses (rubric/direct) to judge, validated.

    Raises ``ValidationError`` naming the first bad item (or the judge's reserved name, for a
    row written without the admin's check); nothing is written.
    """
    validate_judge_name(judge.name)
    model = Comparison if judge.is_pairwise else Response
    uuids = [str(u) for u in dict.fromkeys(str(u) for u in item_uuids)]
    if not uuids:
        raise ValidationError("no items to judge")
    found = {str(o.uuid): o for o in model.objects.select_related("instance")
             .filter(uuid__in=uuids)}
    for u in uuids:
        obj = found.get(u)
        if obj is None:
            raise ValidationError(f"{model.__name__.lower()} {u} does not exist")
        is_conv = obj.instance.kind == Instance.Kind.CONVERSATION
        if judge.kind == Judge.Kind.MULTI_TURN and not is_conv:
            raise ValidationError(f"comparison {u}: a multi-turn judge needs a conversation")
        if judge.kind in (Judge.Kind.PAIRWISE, Judge.Kind.PAIRWISE_REFERENCE,
                          Judge.Kind.PAIRWISE_VLM) and is_conv:
            raise ValidationError(f"comparison {u} is a conversation: use a multi-turn judge")
        if judge.kind == Judge.Kind.DIRECT and is_conv and obj.turn not in (0, 1):
            raise ValidationError(f"response {u}: grade a conversation through its turn 1")
    return [found[u] for u in uuids]


def default_items(judge: Judge) -> list:
    """Every comparison (pairwise kinds) or response (graders) the judge can take."""
    conv = Instance.Kind.CONVERSATION
    if judge.kind == Judge.Kind.MULTI_TURN:
        return list(Comparison.objects.filter(instance__kind=conv).values_list("uuid", flat=True))
    if judge.is_pairwise:
        return list(Comparison.objects.exclude(instance__kind=conv).values_list("uuid", flat=True))
    responses = Response.objects.filter(model__is_reference=False)
    if judge.kind == Judge.Kind.RUBRIC:
        responses = responses.filter(instance__rubrics__isnull=False, turn=0).distinct()
    else:
        responses = responses.filter(turn__in=[0, 1]).exclude(
            instance__kind=Instance.Kind.SINGLE, instance__reference_output="").exclude(
            instance__kind=Instance.Kind.MULTI, instance__reference_output="")
    return list(responses.values_list("uuid", flat=True))


def _orderings(judge: Judge) -> tuple[str, ...]:
    return ORDERINGS if judge.is_pairwise else ("",)


# ---------------------------------------------------------------- estimate / start


def judge_estimate(*, judge: Judge, item_uuids) -> Estimate:
    """Tokens and cost of the calls a run over these items would make (cached calls are free)."""
    items = resolve_items(judge, item_uuids)
    caller = EstimatingCaller(judge)
    for obj in items:
        item = load_item(judge, obj.uuid)
        for ordering in _orderings(judge):
            try:
                run_unit(judge, item, ordering, caller)
            except PlanError:
                continue
    return Estimate(units=len(items) * len(_orderings(judge)), calls=caller.calls,
                    cached_calls=caller.cached, prompt_tokens=caller.prompt_tokens,
                    completion_tokens=caller.completion_tokens, cost=caller.cost)


def judge_run_start(*, judge: Judge, item_uuids, budget: Decimal | None = None,
                    created_by: str = "", dispatch: bool = True,
                    estimate: Estimate | None = None) -> JudgeRun:
    """Create a run with one unit per item and ordering; queue it after commit. A caller that
    has just priced the same items passes its ``estimate`` instead of pricing them again."""
    items = resolve_items(judge, item_uuids)
    if budget is not None and Decimal(budget) < 0:
        raise ValidationError("budget must not be negative")
    if estimate is None:
        estimate = judge_estimate(judge=judge, item_uuids=[o.uuid for o in items])
    orderings = _orderings(judge)
    with transaction.atomic():
        run = JudgeRun.objects.create(
            judge=judge, scope=_scope_for(judge, items), budget=budget,
            estimated_cost=estimate.cost, units_total=len(items) * len(orderings),
            created_by=created_by, created_at=timezone.now())
        JudgeUnit.objects.bulk_create(
            [JudgeUnit(run=run, item=o.uuid, ordering=ordering)
             for o in items for ordering in orderings])
        if dispatch:
            transaction.on_commit(lambda: _dispatch(run))
    return run


def _dispatch(run: JudgeRun) -> None:
    """Hand the run to the broker's workers, or without a broker to a thread of this process:
    a run (resumed from a page or the API) never works inside the request. A run whose
    process stops under it keeps its units and is resumed with ``judge_run_resume``."""
    from .tasks import judge_run_dispatch

    run_outside_request(judge_run_dispatch, (run.pk,))


def judge_run_begin(run: JudgeRun) -> bool:
    """pending -> running (idempotent). False when the run was cancelled or stopped."""
    JudgeRun.objects.filter(pk=run.pk, status=JudgeRun.Status.PENDING).update(
        status=JudgeRun.Status.RUNNING, started_at=timezone.now())
    run.refresh_from_db()
    return run.status == JudgeRun.Status.RUNNING


def judge_run_resume(run: JudgeRun, *, budget: Decimal | None = None,
                     dispatch: bool = True) -> JudgeRun:
    """Re-open a stopped, crashed or finished-with-failures run: unfinished units go back to
    pending. Calls already made are reused through their idempotency keys (never re-paid)."""
    with transaction.atomic():
        run = JudgeRun.objects.select_for_update().get(pk=run.pk)
        if run.status == JudgeRun.Status.CANCELLED:
            raise ValidationError("a cancelled run cannot be resumed; start a new one")
        validate_judge_name(run.judge.name)
        failed = run.units.filter(status=JudgeUnit.Status.FAILED).count()
        run.units.filter(status__in=[JudgeUnit.Status.RUNNING, JudgeUnit.Status.FAILED]).update(
            status=JudgeUnit.Status.PENDING, claimed_at=None, error="")
        if budget is not None:
            run.budget = budget
        # Counters are flushed once per unit; after a crash, rebuild them from the calls.
        spent = JudgeCall.objects.filter(run=run, status=JudgeCall.Status.DONE).aggregate(
            cost=Sum("cost"), made=Count("id"), tin=Sum("prompt_tokens"),
            tout=Sum("completion_tokens"))
        run.cost, run.reserved = spent["cost"] or Decimal("0"), Decimal("0")
        run.calls_made = spent["made"]
        run.tokens_in, run.tokens_out = spent["tin"] or 0, spent["tout"] or 0
        run.units_failed = F("units_failed") - failed
        run.status = JudgeRun.Status.PENDING
        run.finished_at = None
        run.save(update_fields=["budget", "units_failed", "status", "finished_at", "cost",
                                "reserved", "calls_made", "tokens_in", "tokens_out"])
        if dispatch:
            transaction.on_commit(lambda: _dispatch(run))
    run.refresh_from_db()
    return run


def judge_run_cancel(run: JudgeRun) -> JudgeRun:
    """Stop taking new units and calls; calls in flight finish and are kept."""
    from judging.submissions.services import submission_run_stopped

    JudgeRun.objects.filter(pk=run.pk, status__in=[
        JudgeRun.Status.PENDING, JudgeRun.Status.RUNNING, JudgeRun.Status.BUDGET_STOPPED,
    ]).update(status=JudgeRun.Status.CANCELLED, finished_at=timezone.now())
    run.refresh_from_db()
    submission_run_stopped(run, "the judge run was cancelled")
    return run


# ---------------------------------------------------------------- work


def _claim_unit(run: JudgeRun) -> JudgeUnit | None:
    """Next pending unit of a running run, claimed atomically (None: nothing left / stopped).

    PostgreSQL: one statement (``_claim_statement``), so 32 lanes never queue on one row and a
    claim is one round trip. Kept as SQL because it pays: the ORM needs a transaction of a
    locking SELECT and an UPDATE (four round trips), measurably slower in ``bench/judge_run.py``
    (figures in the commit that kept it). Elsewhere (SQLite, no row locks):
    the same claim through the ORM; write transactions run one at a time there
    (``transaction_mode IMMEDIATE``) and the row-count check covers any other database.
    """
    if connection.vendor == "postgresql":
        now = timezone.now()
        with connection.cursor() as cursor:  # one statement: atomic on its own
            cursor.execute(_claim_statement(), [
                JudgeUnit.Status.RUNNING, now, run.pk, JudgeUnit.Status.PENDING,
                run.pk, JudgeRun.Status.RUNNING])
            row = cursor.fetchone()
        if row is None:
            return None
        return JudgeUnit(pk=row[0], run=run, item=row[1], ordering=row[2],
                         status=JudgeUnit.Status.RUNNING, claimed_at=now)
    running = JudgeRun.objects.filter(pk=run.pk, status=JudgeRun.Status.RUNNING)
    while True:
        now = timezone.now()
        with transaction.atomic():
            unit = (JudgeUnit.objects.select_for_update(skip_locked=True)
                    .filter(Exists(running), run_id=run.pk, status=JudgeUnit.Status.PENDING)
                    .order_by("pk").only("pk", "item", "ordering").first())
            if unit is None:
                return None
            claimed = JudgeUnit.objects.filter(
                pk=unit.pk, status=JudgeUnit.Status.PENDING,
            ).update(status=JudgeUnit.Status.RUNNING, claimed_at=now)
        if claimed:
            unit.run, unit.status, unit.claimed_at = run, JudgeUnit.Status.RUNNING, now
            return unit


@cache
def _claim_statement() -> str:
    """``UPDATE … WHERE id = (SELECT … FOR UPDATE SKIP LOCKED) RETURNING``, the PostgreSQL claim.
    Table and column names come quoted from the models; every value (statuses too) is a
    parameter: unit status, claimed_at, run id, pending, run id, running."""
    quote = connection.ops.quote_name
    unit, run = JudgeUnit._meta, JudgeRun._meta

    def col(meta, name: str) -> str:
        return quote(meta.get_field(name).column)

    u_id, u_run, u_status = col(unit, "id"), col(unit, "run"), col(unit, "status")
    return (
        f"UPDATE {quote(unit.db_table)} SET {u_status} = %s, {col(unit, 'claimed_at')} = %s "
        f"WHERE {u_id} = (SELECT u.{u_id} FROM {quote(unit.db_table)} u "
        f"WHERE u.{u_run} = %s AND u.{u_status} = %s AND EXISTS (SELECT 1 FROM "
        f"{quote(run.db_table)} r WHERE r.{col(run, 'id')} = %s AND r.{col(run, 'status')} = %s) "
        f"ORDER BY u.{u_id} LIMIT 1 FOR UPDATE SKIP LOCKED) "
        f"RETURNING {u_id}, {col(unit, 'item')}, {col(unit, 'ordering')}")


def judge_run_work(run_id: int) -> int:
    """One lane: judge pending units until none is left or the run stops. Returns units done."""
    run = JudgeRun.objects.select_related("judge").get(pk=run_id)
    judge = run.judge
    done = 0
    while (unit := _claim_unit(run)) is not None:
        caller = LiveCaller(run=run, judge=judge, item=unit.item, ordering=unit.ordering)
        try:
            item = load_item(judge, unit.item)
            result = run_unit(judge, item, unit.ordering, caller)
        except RunHalted:
            JudgeUnit.objects.filter(pk=unit.pk).update(status=JudgeUnit.Status.PENDING,
                                                        claimed_at=None)
            JudgeRun.objects.filter(pk=run.pk).update(**caller.flush_fields())
            break
        except (CallFailed, PlanError, ObjectDoesNotExist) as exc:
            _unit_failed(run, unit, str(exc), caller)
            continue
        except Exception as exc:  # a bug must not wedge the lane; record it on the unit
            log.exception("judge unit %s failed", unit.pk)
            _unit_failed(run, unit, f"{type(exc).__name__}: {exc}", caller)
            continue
        _unit_done(run, unit, item, result, caller)
        done += 1
    _maybe_finish(run)
    return done


def _unit_failed(run: JudgeRun, unit: JudgeUnit, error: str, caller: LiveCaller) -> None:
    JudgeUnit.objects.filter(pk=unit.pk).update(status=JudgeUnit.Status.FAILED,
                                                error=error[:500], finished_at=timezone.now())
    JudgeRun.objects.filter(pk=run.pk).update(units_failed=F("units_failed") + 1,
                                              **caller.flush_fields())


def _unit_done(run: JudgeRun, unit: JudgeUnit, item, result: dict, caller: LiveCaller) -> None:
    with transaction.atomic():
        # Lock the item's units first (always in pk order, so two orderings finishing together
        # cannot deadlock); the last one to finish writes the judgments, once.
        siblings = list(JudgeUnit.objects.select_for_update()
                        .filter(run=run, item=unit.item).order_by("pk"))
        JudgeUnit.objects.filter(pk=unit.pk).update(
            status=JudgeUnit.Status.DONE, result=result, prompts=caller.prompts,
            finished_at=timezone.now())
        for s in siblings:
            if s.pk == unit.pk:
                s.status, s.result, s.prompts = JudgeUnit.Status.DONE, result, caller.prompts
        if all(s.status == JudgeUnit.Status.DONE for s in siblings):
            _write_judgments(run, item, {s.ordering: s.result for s in siblings},
                             {s.ordering: s.prompts for s in siblings})
        JudgeRun.objects.filter(pk=run.pk).update(units_done=F("units_done") + 1,
                                                  **caller.flush_fields())


def verdict_provenance(prompts: dict[str, dict], turn: str) -> tuple[str, str, dict]:
    """(template version, prompt hash, per-ordering hashes) behind one turn's verdict.

    ``prompts`` is each ordering's ``JudgeUnit.prompts``. The template version is that turn's
    (the same in both orderings unless the template was edited mid-run; then both, joined by
    '+'). The hash is the call's own prompt hash when one prompt produced the verdict (a grade,
    or k samples of one prompt), so it finds the call; when several did (a pairwise verdict
    always combines the AB and the BA prompt), it is the SHA-256 of their hashes, one per
    line, orderings in order AB, BA; the individual hashes are returned for ``meta``.
    """
    versions, hashes = [], {}
    for ordering in sorted(prompts):
        version, turn_hashes = prompts[ordering].get(turn, ("", []))
        if version and version not in versions:
            versions.append(version)
        if turn_hashes:
            hashes[ordering] = list(turn_hashes)
    flat = [h for ordering in sorted(hashes) for h in hashes[ordering]]
    if len(set(flat)) <= 1:
        return "+".join(versions)[:80], (flat[0] if flat else ""), {}
    combined = hashlib.sha256("\n".join(flat).encode("ascii")).hexdigest()
    return "+".join(versions)[:80], combined, hashes


def _write_judgments(run: JudgeRun, item: Comparison | Response, results: dict[str, dict],
                     prompts: dict[str, dict] | None = None) -> None:
    """Final verdicts as ``Judgment`` rows (one per turn), each with the template version and
    prompt hash that produced it, stored by ``judgments_record``: they replace this judge
    version's earlier verdicts on the same item (``existing`` below) *under the same template
    version* (a re-run never double-counts); verdicts of another template version stay, and
    the selectors count only the latest ones."""
    judge = run.judge
    now = timezone.now()
    prompts = prompts or {}
    rows = []

    def judgment(turn: str, **fields) -> dict:
        version, p_hash, hashes = verdict_provenance(prompts, turn)
        return {"turn": turn, "template_version": version, "prompt_hash": p_hash,
                "meta": {"prompt_hashes": hashes} if hashes else {}, "created_at": now,
                **fields}

    if judge.is_pairwise:
        comparison = item
        ab, ba = results.get("AB", {}), results.get("BA", {})
        for turn in ab:
            choice = combine_orderings(ab.get(turn), ba.get(turn))
            rows.append(judgment(turn, comparison=comparison, choice=choice,
                                 feedback=f"A/B order: {ab.get(turn)}; B/A order: "
                                          f"{ba.get(turn)} (as shown)"))
        existing = Judgment.objects.filter(comparison=comparison)
    else:
        response = item
        result = results[""]
        turns = [t for t in result if t not in ("feedback", "", "overall")]
        by_turn = {}
        if turns:  # a conversation's per-turn grades go to that turn's response, in one read
            for r in Response.objects.filter(
                    instance_id=response.instance_id, model_id=response.model_id,
                    condition=response.condition, turn__in=[int(t) for t in turns]
            ).order_by("-pk"):
                by_turn[str(r.turn)] = r
        for turn, score in result.items():
            if turn == "feedback":
                continue
            rows.append(judgment(turn, kind=Judgment.Kind.SCORE,
                                 response=by_turn.get(turn, response), score=score,
                                 feedback=result.get("feedback", "")))
        existing = Judgment.objects.filter(response__instance_id=response.instance_id,
                                           response__model_id=response.model_id,
                                           response__condition=response.condition)
        if response.instance.kind != Instance.Kind.CONVERSATION:
            existing = Judgment.objects.filter(response=response)
    judgments_record(rows, judge=judge, supersedes=existing)


def _maybe_finish(run: JudgeRun) -> None:
    open_units = run.units.filter(status__in=[JudgeUnit.Status.PENDING,
                                              JudgeUnit.Status.RUNNING])
    if not open_units.exists():
        finished = JudgeRun.objects.filter(pk=run.pk, status=JudgeRun.Status.RUNNING).update(
            status=JudgeRun.Status.DONE, finished_at=timezone.now())
        if finished:  # the one lane whose update finished the run tells the subscribers
            _announce_done(run.pk)


def _announce_done(run_id: int) -> None:
    from judging.submissions.services import submission_run_finished

    run = JudgeRun.objects.select_related("judge").get(pk=run_id)
    submission_run_finished(run)
    webhook_emit("judge_run.done", {
        "run": run.uuid, "judge": run.judge.name, "status": run.status,
        "units_total": run.units_total, "units_done": run.units_done,
        "units_failed": run.units_failed, "cost": str(run.cost),
        "finished_at": run.finished_at})


def judge_run_execute(run: JudgeRun, *, concurrency: int | None = None, processes: int = 1,
                      on_progress=None, poll_s: float = 0.5) -> JudgeRun:
    """Work a run in this process with ``concurrency`` lane threads (command, bench, demo).

    ``processes`` > 1 splits the lanes over that many forked processes, as Celery's prefork
    pool would: on PostgreSQL the lanes' database and parsing work is CPU-bound, and threads
    of one interpreter share one core. ``on_progress(run)`` is called every ``poll_s`` while
    lanes work (the command's bar).
    """
    if not judge_run_begin(run):
        return run
    lanes = max(1, concurrency or run.judge.concurrency)
    processes = max(1, min(processes, lanes))
    if lanes == 1 or not _threads_share_database():
        judge_run_work(run.pk)
    elif processes > 1 and connection.vendor == "postgresql":
        _work_in_processes(run, lanes, processes, on_progress, poll_s)
    else:
        _work_in_threads(run, lanes, on_progress, poll_s)
    run.refresh_from_db()
    if on_progress:
        on_progress(run)
    return run


def _work_in_threads(run: JudgeRun, lanes: int, on_progress, poll_s: float) -> None:
    with ThreadPoolExecutor(max_workers=lanes, thread_name_prefix="judge-lane") as pool:
        futures = [pool.submit(_threaded_lane, run.pk) for _ in range(lanes)]
        while wait(futures, timeout=poll_s if on_progress else None).not_done:
            run.refresh_from_db()
            on_progress(run)
        for future in futures:
            future.result()


def _work_in_processes(run: JudgeRun, lanes: int, processes: int, on_progress,
                       poll_s: float) -> None:
    """Fork ``processes`` children sharing ``lanes`` lane threads; a child that dies leaves
    its units running, which ``judge_run_resume`` re-opens (its calls are never re-paid)."""
    context = multiprocessing.get_context("fork")
    connections.close_all()  # a forked child must not share the parent's sockets
    close_clients()
    shares = [lanes // processes + (i < lanes % processes) for i in range(processes)]
    children = [context.Process(target=_lane_process, args=(run.pk, share), daemon=True)
                for share in shares]
    for child in children:
        child.start()
    while any(child.is_alive() for child in children):
        for child in children:
            child.join(timeout=poll_s / len(children))
        if on_progress:
            run.refresh_from_db()
            on_progress(run)
    failed = [child.exitcode for child in children if child.exitcode != 0]
    if failed:
        raise RuntimeError(f"{len(failed)} judge lane process(es) failed (exit codes {failed}); "
                           "resume the run to finish its units")


def _lane_process(run_id: int, lanes: int) -> None:
    close_clients()  # HTTP clients inherited from the parent hold its sockets
    run = JudgeRun.objects.get(pk=run_id)
    try:
        if lanes == 1:
            judge_run_work(run_id)
        else:
            _work_in_threads(run, lanes, None, 0)
    finally:
        close_clients()
        connections.close_all()


def _threads_share_database() -> bool:
    """Lane threads use their own connections: they cannot see rows of a transaction still
    open here, nor a private in-memory SQLite database. Then work the run in one lane."""
    if connection.in_atomic_block:
        return False
    name = str(connection.settings_dict["NAME"])
    return not (connection.vendor == "sqlite" and (name in ("", ":memory:")
                                                   or "mode=memory" in name))


def _threaded_lane(run_id: int) -> int:
    try:
        return judge_run_work(run_id)
    finally:
        close_old_connections()
        connection.close()


__all__ = [
    "Estimate", "default_items", "judge_estimate", "judge_run_begin", "judge_run_cancel",
    "judge_run_execute",
    "judge_run_resume", "judge_run_start", "judge_run_work", "resolve_items",
]
