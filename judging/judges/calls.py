"""One judge call, executed at most once per idempotency key, within the run's budget.

Protocol for a call (no database transaction is held across the HTTP request):

1. INSERT the ``JudgeCall`` row by its key, already claimed (in flight, a fresh claim token and
   lease). If the key exists, a DONE row is returned as is (cached: a re-run or resumed run
   pays nothing for it); any other is claimed with a conditional UPDATE (pending/failed, or in
   flight with an expired lease) and a fresh claim token; a live lease is waited for.
2. Reserve the call's worst-case cost on the run with a conditional UPDATE
   (``cost + reserved + estimate <= budget``). No room -> the run stops (``budget_stopped``) and
   the call goes back to pending, never sent. Without a budget the run is only checked to be
   still running (a cancel stops the calls of a lane's claimed batch the same way).
3. Send the request; store the raw output, tokens and cost *before* parsing, so a crash during
   the extraction step never repeats the paid judge call.
4. Parse strictly; if that fails on a non-empty output, make the cheaper extraction call (itself
   an idempotent call). Unknown -> 'unknown' (a tie when the orderings are combined).
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from functools import cache

from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection
from django.db.models import F, Q
from django.utils import timezone

from annotation.core.clients.llm import (
    ChatClient,
    LlmEndpoint,
    LlmError,
    estimate_cost,
    multimodal_message,
)
from annotation.core.rate_limit import rate_limiter
from annotation.core.sql import ModelColumns, savepoint_if_nested, statement_cursor
from annotation.webhooks.services import webhook_emit

from .hooks import run_ended
from .models import Judge, JudgeCall, JudgeRun, validate_api_key_env
from .plans import Outcome, PlanError, run_unit
from .templates import load_template

POLL_S = 0.05


class RunHalted(Exception):
    """The run is no longer running (cancelled or budget reached): stop taking work."""


class BudgetExceeded(RunHalted):
    pass


class CallFailed(Exception):
    """The provider call failed for good (retries exhausted or a non-retryable error)."""


def _canonical(messages: list[dict]) -> str:
    return json.dumps(messages, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def prompt_hash(messages: list[dict]) -> str:
    return hashlib.sha256(_canonical(messages).encode("utf-8")).hexdigest()


def idempotency_key(judge: Judge, p_hash: str, sample: int) -> str:
    """hash(judge name@version + sampling fingerprint + rendered prompt hash + sample index)."""
    fingerprint = f"{judge.model_name}|{judge.temperature}|{judge.max_tokens}|{judge.seed}"
    raw = f"{judge.ident}\n{fingerprint}\n{p_hash}\n{sample}"
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def estimate_prompt_tokens(messages: list[dict]) -> int:
    """Deliberately generous (3 chars/token, 1000 per image) so budget reservations hold."""
    chars, images = 0, 0
    for msg in messages:
        content = msg["content"]
        if isinstance(content, str):
            chars += len(content)
        else:
            for part in content:
                if part.get("type") == "text":
                    chars += len(part["text"])
                else:
                    images += 1
    return chars // 3 + 1000 * images + 8 * len(messages)


def money(value: float) -> Decimal:
    return Decimal(str(round(value, 6)))


def call_cost(judge: Judge, prompt_tokens: int, completion_tokens: int) -> Decimal:
    return money(estimate_cost(prompt_tokens, completion_tokens,
                               float(judge.price_in_per_1k), float(judge.price_out_per_1k)))


def lease_seconds(judge: Judge) -> float:
    """Longest a live worker can hold a call: every attempt timing out plus every backoff."""
    return (judge.timeout_s * (judge.max_retries + 1) + judge.backoff_max_s * judge.max_retries
            + 2.0)


def with_images(messages: list[dict], images: list[str]) -> list[dict]:
    """Attach image parts to the last user message (VLM judges)."""
    if not images:
        return messages
    last = messages[-1]
    return messages[:-1] + [multimodal_message(last["role"], last["content"], images)]


# ---------------------------------------------------------------- provider clients

_clients: dict[tuple, ChatClient] = {}
_clients_lock = threading.Lock()


def client_for(judge: Judge) -> ChatClient:
    """One pooled, thread-safe client per judge config per process; its RPM/TPM limiter is
    shared by every process (``annotation.core.rate_limit``)."""
    key = (judge.pk, judge.version, judge.base_url, judge.model_name, judge.api_key_env,
           judge.timeout_s, judge.max_retries, judge.requests_per_minute,
           judge.tokens_per_minute)
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            api_key = None
            if judge.api_key_env:
                try:  # also for rows written without a form
                    validate_api_key_env(judge.api_key_env)
                except ValidationError as exc:
                    raise CallFailed(exc.messages[0]) from None
                api_key = os.environ.get(judge.api_key_env)
                if not api_key:
                    raise CallFailed(f"environment variable {judge.api_key_env} (API key of "
                                     f"judge {judge}) is not set")
            config = LlmEndpoint(
                base_url=judge.base_url, api_key=api_key, model=judge.model_name,
                timeout_s=judge.timeout_s, max_retries=judge.max_retries,
                backoff_base_s=judge.backoff_base_s, backoff_max_s=judge.backoff_max_s)
            limiter = None  # shared by every process through Redis when it is configured
            if judge.requests_per_minute or judge.tokens_per_minute:
                limiter = rate_limiter(config.rate_limit_key(), judge.requests_per_minute,
                                       judge.tokens_per_minute)
            client = _clients[key] = ChatClient(config, rate_limiter=limiter)
        return client


def close_clients() -> None:
    with _clients_lock:
        for client in _clients.values():
            client.close()
        _clients.clear()


# ---------------------------------------------------------------- callers


def _insert_claimed(call: JudgeCall, *, while_running: bool = False) -> bool | None:
    """INSERT the call already claimed; False when its key exists (done, or someone else's).

    One statement instead of insert-then-claim on the hot path; True when we own the row.
    ``while_running`` (PostgreSQL only): the same statement inserts only while the call's run
    is running, and None means it was not (nothing written): a run without a budget then
    needs no separate check before each call (one round trip fewer per call).
    """
    if while_running:
        fields, sql = _insert_while_running()
        values = [f.get_db_prep_save(f.pre_save(call, True), connection) for f in fields]
        with statement_cursor() as cursor:
            cursor.execute(sql, [*values, call.run_id, JudgeRun.Status.RUNNING])
            row = cursor.fetchone()
        if row is not None:
            call.pk = row[0]
            call._state.adding, call._state.db = False, connection.alias
            return True
        return False if _key_taken(call) else None
    # In autocommit (a lane) the INSERT is its own transaction; inside a caller's transaction
    # a savepoint keeps a taken key from aborting it.
    try:
        with savepoint_if_nested():
            call.save(force_insert=True)
    except IntegrityError:
        if _key_taken(call):
            return False
        raise  # another constraint (a run deleted under us): not a key taken
    return True


def _key_taken(call: JudgeCall) -> bool:
    return JudgeCall.objects.filter(idempotency_key=call.idempotency_key).exists()


@cache
def _insert_while_running() -> tuple[list, str]:
    """PostgreSQL: ``INSERT … SELECT … WHERE`` the run is running ``ON CONFLICT`` on the key
    ``DO NOTHING RETURNING`` the id. Names come quoted from the models; every value is a
    parameter: the call's columns, then the run id and the running status. Any other refusal
    (the run deleted under it) still raises."""
    calls, runs = ModelColumns(JudgeCall), ModelColumns(JudgeRun, "r")
    quote = connection.ops.quote_name
    fields = [f for f in JudgeCall._meta.concrete_fields if not f.primary_key]
    columns = ", ".join(quote(f.column) for f in fields)
    return fields, (
        f"INSERT INTO {calls.name()} ({columns}) SELECT {', '.join(['%s'] * len(fields))}"
        f" WHERE EXISTS (SELECT 1 FROM {runs.table()} WHERE {runs.col('pk')} = %s"
        f" AND {runs.col('status')} = %s)"
        f" ON CONFLICT ({calls.col('idempotency_key')}) DO NOTHING RETURNING {calls.col('pk')}")


@dataclass
class LiveCaller:
    """Makes real, idempotent, budget-checked calls on behalf of one run.

    One caller serves a lane's units, batch after batch (``start_unit`` before each). Run counters
    (cost, tokens, calls) are accumulated here and written by ``flush_fields``: after each unit
    that reserved money (a run with a budget), else once per batch; the budget stays hard
    because each call's worst-case cost is reserved on the run *before* it is sent and released
    only in that same update. ``known``: the batch's calls looked up at once
    (``known_calls``): a key found done there is answered without a query.
    """

    run: JudgeRun
    judge: Judge
    item: uuid.UUID | None = None
    ordering: str = ""
    known: dict = field(default_factory=dict)  # idempotency key -> done JudgeCall or None
    cost: Decimal = Decimal("0")
    reserved: Decimal = Decimal("0")
    made: int = 0
    cached: int = 0
    failed: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    sent: int = 0  # requests sent by this caller (never reset: tells paid work from cached)
    found: int = 0  # calls found done instead (never reset: is a look-up worth making?)
    prompts: dict = field(default_factory=dict)  # turn -> [template version, [prompt hashes]]

    def call(self, template, messages, *, parse, turn: str, sample: int,
             images: list[str] = ()) -> Outcome:
        """One judge call; ``parse`` is the kind's parser (``kinds.shapes``)."""
        call = self._execute(template, with_images(messages, list(images)), parse=parse,
                             turn=turn, sample=sample, purpose=JudgeCall.Purpose.JUDGE,
                             max_tokens=self.judge.max_tokens)
        self._note_prompt(turn, template.version, call.prompt_hash)
        if call.parse_path == "":
            call = self._extract(call, parse)
        raw = "" if call.refused and call.parse_path == JudgeCall.ParsePath.FAILED else \
            call.raw_output
        return Outcome(verdict=call.verdict, score=call.score, raw=raw, feedback=_feedback(call, parse))

    def start_unit(self, item: uuid.UUID, ordering: str) -> None:
        """The next unit of the batch: its calls name it, its prompts start empty."""
        self.item, self.ordering, self.prompts = item, ordering, {}

    def flush_fields(self) -> dict:
        """F-expression updates for the run row of the counters gathered since the last flush
        (non-zero ones only; each costs ORM time), which start again from zero: the caller
        applies them in one UPDATE."""
        deltas = {"cost": self.cost, "reserved": -self.reserved, "calls_made": self.made,
                  "calls_cached": self.cached, "calls_failed": self.failed,
                  "tokens_in": self.tokens_in, "tokens_out": self.tokens_out}
        self.cost = self.reserved = Decimal("0")
        self.made = self.cached = self.failed = self.tokens_in = self.tokens_out = 0
        return {name: F(name) + delta for name, delta in deltas.items() if delta}

    def _note_prompt(self, turn: str, version: str, p_hash: str) -> None:
        """What produced this unit's verdict per turn (stored on the unit, then the judgment).
        The k samples of one prompt share its hash; a turn whose prompt embeds earlier outputs
        (an overall verdict) has one hash per sample."""
        _, hashes = self.prompts.setdefault(turn, [version, []])
        if p_hash not in hashes:
            hashes.append(p_hash)

    # -- parsing fallback: the extraction call
    def _extract(self, call: JudgeCall, parse) -> JudgeCall:
        low, high = parse.score_range
        template = load_template(parse.extraction_template, self.judge.template_overrides)
        messages = template.render(judge_output=call.raw_output, low=low, high=high)
        extraction = self._execute(template, messages, parse=None, turn=call.turn,
                                   sample=call.sample_index,
                                   purpose=JudgeCall.Purpose.EXTRACTION,
                                   max_tokens=self.judge.extraction_max_tokens)
        verdict, score = parse.from_extraction(extraction.raw_output)
        ok = verdict in ("A", "B") or score is not None
        fields = {"parse_path": JudgeCall.ParsePath.EXTRACTION if ok else JudgeCall.ParsePath.FAILED,
                  "verdict": verdict, "score": score, "extraction_id": extraction.pk}
        JudgeCall.objects.filter(pk=call.pk).update(**fields)
        for key, value in fields.items():
            setattr(call, key, value)
        return call

    # -- the idempotent call
    def _execute(self, template, messages, *, parse, turn, sample, purpose, max_tokens):
        judge, run = self.judge, self.run
        p_hash = prompt_hash(messages)
        key = idempotency_key(judge, p_hash, sample)
        known = self.known.get(key)
        if known is not None:  # done before this batch (a done call never changes): free
            self.found += 1
            if known.run_id != run.pk and purpose == JudgeCall.Purpose.JUDGE:
                self.cached += 1
            return known
        now = timezone.now()
        token = uuid.uuid4()
        fresh = JudgeCall(
            idempotency_key=key, run=run, judge=judge, purpose=purpose, item=self.item,
            ordering=self.ordering, turn=turn, sample_index=sample,
            template_name=template.name, template_version=template.version,
            prompt_hash=p_hash, created_at=now, status=JudgeCall.Status.IN_FLIGHT,
            claim_token=token, attempts=1,
            lease_expires_at=now + timedelta(seconds=lease_seconds(judge)))
        # Without a budget, the INSERT itself checks that the run is running (PostgreSQL).
        guarded = run.budget is None and connection.vendor == "postgresql"
        inserted = _insert_claimed(fresh, while_running=guarded)
        if inserted is None:  # the run stopped: nothing was written, nothing is sent
            raise self._halted()
        if not inserted:  # the key exists: done, or someone else's to claim
            token = self._claim(key)
        if token is None:  # done already (this run or an earlier one): free
            self.found += 1
            call = JudgeCall.objects.get(idempotency_key=key)
            if call.run_id != run.pk and purpose == JudgeCall.Purpose.JUDGE:
                self.cached += 1
            return call
        reserve = call_cost(judge, estimate_prompt_tokens(messages), max_tokens)
        self._reserve(key, token, reserve, seen_running=guarded and inserted)
        seed = (judge.seed or 0) + sample if (judge.seed is not None or judge.k > 1) else None
        self.sent += 1
        try:
            result = client_for(judge).complete(
                messages, temperature=judge.temperature, max_tokens=max_tokens, seed=seed,
                idempotency_key=key)
        except (LlmError, CallFailed) as exc:
            self.failed += 1
            JudgeCall.objects.filter(idempotency_key=key, claim_token=token).update(
                status=JudgeCall.Status.FAILED, error=str(exc)[:500], lease_expires_at=None,
                attempts=F("attempts") + getattr(exc, "attempts", 1) - 1,
                finished_at=timezone.now())
            raise CallFailed(str(exc)[:480]) from exc
        cost = call_cost(judge, result.prompt_tokens, result.completion_tokens)
        self.made += 1
        self.cost += cost
        self.tokens_in += result.prompt_tokens
        self.tokens_out += result.completion_tokens
        text = result.text if result.text.strip() else ""
        done = {"status": JudgeCall.Status.DONE, "raw_output": text or (result.refusal or ""),
                "refused": result.refused, "prompt_tokens": result.prompt_tokens,
                "completion_tokens": result.completion_tokens, "cost": cost,
                "finished_at": timezone.now(), "error": "", "lease_expires_at": None,
                "parse_path": "", "verdict": "", "score": None}
        if purpose == JudgeCall.Purpose.JUDGE:
            strict = parse.strict(text) if text else None
            if strict is not None:
                done.update(parse_path=JudgeCall.ParsePath.STRICT, verdict=strict[0],
                            score=strict[1])
            elif not text:  # refusal or empty output: nothing to extract
                done.update(parse_path=JudgeCall.ParsePath.FAILED, verdict="unknown")
        # Stored before any extraction call, so a crash there never repeats this paid call.
        JudgeCall.objects.filter(idempotency_key=key, claim_token=token).update(
            attempts=F("attempts") + result.attempts - 1, **done)
        call = JudgeCall(idempotency_key=key, run=run, judge=judge, purpose=purpose, turn=turn,
                         sample_index=sample, template_name=template.name,
                         template_version=template.version, prompt_hash=p_hash, **done)
        if done["parse_path"] == "":  # an extraction call will update this row: its pk
            call.pk = fresh.pk if inserted else JudgeCall.objects.values_list(
                "pk", flat=True).get(idempotency_key=key)
        return call

    def _claim(self, key: str) -> uuid.UUID | None:
        """Claim token, or None when the call is already done. Waits on a live lease."""
        lease = timedelta(seconds=lease_seconds(self.judge))
        while True:
            now = timezone.now()
            token = uuid.uuid4()
            claimable = Q(status__in=[JudgeCall.Status.PENDING, JudgeCall.Status.FAILED]) | Q(
                status=JudgeCall.Status.IN_FLIGHT, lease_expires_at__lt=now)
            claimed = JudgeCall.objects.filter(claimable, idempotency_key=key).update(
                status=JudgeCall.Status.IN_FLIGHT, claim_token=token,
                lease_expires_at=now + lease, attempts=F("attempts") + 1)
            if claimed:
                return token
            if JudgeCall.objects.filter(idempotency_key=key,
                                        status=JudgeCall.Status.DONE).exists():
                return None
            time.sleep(POLL_S)  # another worker holds a live lease: wait for its result

    def _halted(self) -> RunHalted:
        """The stop of a run that is no longer running, naming its status."""
        current = JudgeRun.objects.values_list("status", flat=True).get(pk=self.run.pk)
        return RunHalted(f"run is {current}")

    def _reserve(self, key: str, token, amount: Decimal, seen_running: bool = False) -> None:
        """Hold the call's worst-case cost on the run, which must still be running (a lane
        claims a batch of units: a cancel must stop the calls of those not yet judged).
        ``seen_running``: the call's own INSERT has just found it running (no budget)."""
        run = self.run
        if seen_running:
            return
        running = JudgeRun.objects.filter(pk=run.pk, status=JudgeRun.Status.RUNNING)
        if run.budget is None:
            if running.exists():
                return
        elif running.filter(budget__gte=F("cost") + F("reserved") + amount).update(
                reserved=F("reserved") + amount):
            self.reserved += amount
            return
        JudgeCall.objects.filter(idempotency_key=key, claim_token=token).update(
            status=JudgeCall.Status.PENDING, claim_token=None, lease_expires_at=None,
            attempts=F("attempts") - 1)
        if run.budget is None:
            raise self._halted()
        stopped = JudgeRun.objects.filter(pk=run.pk, status=JudgeRun.Status.RUNNING).update(
            status=JudgeRun.Status.BUDGET_STOPPED, finished_at=timezone.now())
        if stopped:  # this lane stopped the run: it alone tells the subscribers
            _announce_budget_stop(run)
        current = JudgeRun.objects.values_list("status", flat=True).get(pk=run.pk)
        if stopped or current == JudgeRun.Status.BUDGET_STOPPED:
            raise BudgetExceeded(f"budget {run.budget} reached")
        raise RunHalted(f"run is {current}")


def _announce_budget_stop(run: JudgeRun) -> None:
    stopped = JudgeRun.objects.select_related("judge").get(pk=run.pk)
    run_ended(stopped, finished=False, why="the judge run reached its budget")
    webhook_emit("budget.reached", {
        "what": "judge_run", "run": stopped.uuid, "judge": stopped.judge.name,
        "budget": str(stopped.budget), "cost": str(stopped.cost),
        "units_done": stopped.units_done, "units_total": stopped.units_total},
        study=stopped.study_id)


def _feedback(call: JudgeCall, parse) -> str:
    """The grade's feedback, from a strictly parsed answer only (a cached call's too)."""
    if call.score is None or call.parse_path != JudgeCall.ParsePath.STRICT:
        return ""
    return parse.feedback(call.raw_output)


@dataclass
class EstimatingCaller:
    """Walks the same prompts as a run without calling anyone; done calls count as cached."""

    judge: Judge
    known: dict = field(default_factory=dict)  # idempotency key -> done JudgeCall or None
    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def call(self, template, messages, *, parse, turn, sample, images=()) -> Outcome:
        messages = with_images(messages, list(images))
        key = idempotency_key(self.judge, prompt_hash(messages), sample)
        if key in self.known:
            done = self.known[key]
        else:  # a prompt built from earlier outputs (multi-turn overall): not looked up yet
            done = JudgeCall.objects.filter(idempotency_key=key,
                                            status=JudgeCall.Status.DONE).first()
        if done is not None:
            self.cached += 1
            return Outcome(verdict=done.verdict, score=done.score, raw=done.raw_output)
        self.calls += 1
        self.prompt_tokens += estimate_prompt_tokens(messages)
        self.completion_tokens += self.judge.expected_output_tokens
        placeholder = "x" * (4 * self.judge.expected_output_tokens)
        return Outcome(verdict="A", score=None, raw=placeholder)

    @property
    def cost(self) -> Decimal:
        return call_cost(self.judge, self.prompt_tokens, self.completion_tokens)


# ---------------------------------------------------------------- batch look-up


@dataclass
class _KeyCollector:
    """Walks units' prompts without calling anyone, noting each call's idempotency key.
    Prompts built from earlier outputs (a multi-turn overall verdict) get placeholder outputs
    here, so their keys may differ from the real ones: callers look those up one by one."""

    judge: Judge
    keys: list = field(default_factory=list)

    def call(self, template, messages, *, parse, turn, sample, images=()) -> Outcome:
        messages = with_images(messages, list(images))
        self.keys.append(idempotency_key(self.judge, prompt_hash(messages), sample))
        return Outcome(verdict="unknown", raw="")


def known_calls(judge: Judge, units, *, chunk: int = 500) -> dict:
    """``{idempotency key: done JudgeCall or None}`` for the calls ``units`` (``(item,
    ordering)`` pairs) will make, in one query per ``chunk`` keys instead of a few per call.
    Done is final, so a done row stays valid; None means "not done when looked", and the live
    caller then takes the full protocol."""
    collector = _KeyCollector(judge)
    for item, ordering in units:
        try:
            run_unit(judge, item, ordering, collector)
        except PlanError:
            continue
    keys = list(dict.fromkeys(collector.keys))
    known = dict.fromkeys(keys)
    for start in range(0, len(keys), chunk):
        for call in JudgeCall.objects.filter(idempotency_key__in=keys[start:start + chunk],
                                             status=JudgeCall.Status.DONE):
            known[call.idempotency_key] = call
    return known
