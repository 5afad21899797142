"""Prolific provider over its REST API (httpx). One study per batch; one task per session.

The audience of a study is its filters (the batch's chosen filters, the approval rate, the
deployment's blocklist group, the required qualification's allowlist group, and earlier
studies' participants when the batch wants new people); a launch is refused when fewer
participants are eligible than places, or when the pay is below Prolific's hourly minimum.
Blocks and qualifications are participant groups (``groups``), statuses and review rules are
in ``statuses``, pay in ``pay``, hook signatures in ``signing``.

Participants arrive at our batch URL with ``PROLIFIC_PID``, ``STUDY_ID`` and ``SESSION_ID``
(the submission id), do one task, and are sent back with the study's completion code.
Prolific's bonus *pay* call is not idempotent, so the bonus service claims the bonus row before
calling and marks an unanswered call "uncertain" instead of retrying it.

Retries: only idempotent calls (GETs, and the approve transition, which Prolific documents as
idempotent) are retried, on 429, 5xx and connection errors, up to ``PROLIFIC_MAX_ATTEMPTS``
attempts, with full-jitter backoff or the server's ``Retry-After``
(``annotation.core.clients.retry``). A call that creates or moves money (studies, bonus set-up
and pay) or a transition that may answer differently the second time is sent once.
"""
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from decimal import Decimal

import httpx
from django.conf import settings
from django.core.cache import cache
from django.urls import reverse

from annotation.core.clients.errors import MarketplaceError, NotSupported
from annotation.core.clients.retry import RETRYABLE_STATUS, backoff_delay, retry_after_seconds
from annotation.core.money import MoneyField
from annotation.providers.base import (
    CreatedHit,
    HitSpec,
    LaunchContext,
    Provider,
    RemoteSubmission,
    register,
)
from annotation.providers.costs import FeeSchedule
from annotation.providers.prolific import statuses
from annotation.providers.prolific.pay import PayCheck, pay_check, screen_out_problem

# A rate is not stored, so its places are ours: 6 takes any percentage to 4 decimals.
FEE_RATE = MoneyField("Prolific fee rate (PROLIFIC_FEE_RATE)", limit_setting="MAX_FEE_RATE",
                      places=6, field="PROLIFIC_FEE_RATE")

_URL_PARAMS = "PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
_IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE"})
_BACKOFF_BASE_S = 0.5
_BACKOFF_MAX_S = 30.0
BLOCKLIST_GROUP = "vlmeval-blocklist"  # one per deployment (workspace)
RECOMMENDATIONS_TTL_S = 3600


sleep: Callable[[float], None] = time.sleep  # tests replace it


def screen_out_code(completion_code: str) -> str:
    """The code a screened-out participant returns with: distinct from the completion code."""
    return f"SO{completion_code}"


def study_token(batch_uuid) -> str:
    return f"batch-{batch_uuid.hex}"


@register
class ProlificProvider(Provider):
    name = "prolific"
    paid = True
    bonus_idempotent = False
    can_block = True  # through the deployment's blocklist participant group
    urls = "annotation.providers.prolific.urls"  # the study's page, completion, status hooks

    def __init__(self, http: httpx.Client | None = None):
        self._http = http

    def http(self) -> httpx.Client:
        if self._http is None:
            if not settings.PROLIFIC_API_TOKEN:
                raise MarketplaceError("PROLIFIC_API_TOKEN is not set.")
            self._http = httpx.Client(
                base_url=settings.PROLIFIC_BASE_URL.rstrip("/") + "/",
                headers={"Authorization": f"Token {settings.PROLIFIC_API_TOKEN}"},
                timeout=settings.PROLIFIC_TIMEOUT,
            )
        return self._http

    def _request(self, method: str, path: str, json=None, params=None, *,
                 idempotent: bool | None = None) -> dict:
        """One API call; retried only when ``idempotent`` (default: by the HTTP method)."""
        if idempotent is None:
            idempotent = method in _IDEMPOTENT_METHODS
        attempts = max(1, settings.PROLIFIC_MAX_ATTEMPTS) if idempotent else 1
        for attempt in range(1, attempts + 1):
            retry_after = None
            tries = f" (attempt {attempt})" if attempt > 1 else ""
            try:
                response = self.http().request(method, path, json=json, params=params)
            except httpx.TransportError as exc:
                if attempt == attempts:
                    raise MarketplaceError(f"Prolific {method} {path}{tries}: {exc}",
                                           definite=False) from exc
            else:
                status = response.status_code
                if status < 400:
                    return response.json() if response.content else {}
                if status not in RETRYABLE_STATUS or attempt == attempts:
                    raise MarketplaceError(
                        f"Prolific {method} {path}{tries}: HTTP {status}: {response.text[:300]}",
                        definite=status < 500)
                retry_after = retry_after_seconds(response.headers)
            sleep(backoff_delay(attempt, base=_BACKOFF_BASE_S, cap=_BACKOFF_MAX_S,
                                retry_after=retry_after))
        raise AssertionError("unreachable")

    def fees(self) -> FeeSchedule:
        """Prolific's service fee (about 33.33 % plus VAT where it applies, on rewards and
        bonuses alike: its researcher help, "How to resolve an underpaying study")."""
        return FeeSchedule(kind="rate", rate=FEE_RATE.parse(settings.PROLIFIC_FEE_RATE))

    def paid_outside_assignments(self, batch_ids) -> dict[int, tuple[Decimal, int]]:
        """Screened-out places of batches that pay a screen-out reward: their slot reopens for
        someone else, but Prolific paid the fixed reward (two queries)."""
        from django.db.models import Count

        from annotation.providers.models import ProviderConfig, ProviderSubmission

        rewards = dict(ProviderConfig.objects.filter(batch_id__in=batch_ids,
                                                     screen_out_reward__gt=0)
                       .values_list("batch_id", "screen_out_reward"))
        if not rewards:
            return {}
        screened = (ProviderSubmission.objects
                    .filter(hit__batch_id__in=list(rewards), remote_status="screened_out")
                    .values("hit__batch_id").annotate(n=Count("id"))
                    .values_list("hit__batch_id", "n"))
        return {batch_id: (rewards[batch_id], n) for batch_id, n in screened}

    def upload_note(self, batch) -> tuple[str, bool]:
        """(what the upload says about the new batch's hourly pay, whether it is below the
        floor). No call to Prolific at upload: the floor here is the setting; the launch asks
        Prolific."""
        from annotation.providers.services import config_for

        check = pay_check(reward=batch.reward,
                          estimated_minutes=config_for(batch).estimated_minutes,
                          seconds_spent=[], minimum=Decimal(settings.PROLIFIC_MIN_HOURLY),
                          recommended=Decimal(settings.PROLIFIC_RECOMMENDED_HOURLY))
        if check.below_minimum:
            return (check.refusal().replace("Pay below", "The launch will be refused: pay below"),
                    True)
        if check.below_recommended:
            return check.warning(), True
        return f"On Prolific: {check.describe()}.", False

    # --- launch ---------------------------------------------------------------------------
    def launch_facts(self, batch):
        """``launch_page.ProlificLaunchFacts``: pay, audience, filter sets, study links."""
        from annotation.providers.prolific.launch_page import prolific_launch_facts

        return prolific_launch_facts(batch, self)

    def check_ready(self, ctx: LaunchContext) -> None:
        if not settings.PUBLIC_BASE_URL.startswith("https://"):
            raise MarketplaceError("PUBLIC_BASE_URL must be an https address for Prolific.")
        if not ctx.completion_code:
            raise MarketplaceError("The batch has no completion code.")
        self.http()
        check = self.pay_check(ctx)
        if check.below_minimum:
            raise MarketplaceError(check.refusal())
        if ctx.screen_out_reward is not None:
            problem = screen_out_problem(ctx.screen_out_reward, ctx.reward,
                                         screening_minutes=ctx.screening_minutes,
                                         minimum=check.minimum)
            if problem:
                raise MarketplaceError(problem)
        if ctx.places:
            eligible = self.eligible_count(self.counted_filters(ctx))
            if eligible < ctx.places:
                raise MarketplaceError(
                    f"Audience too small: {eligible} participants on Prolific match the "
                    f"batch's filters, and the study needs {ctx.places} places. Widen the "
                    "filters or ask for fewer votes.")

    # --- audience -------------------------------------------------------------------------
    def study_filters(self, ctx: LaunchContext) -> list[dict]:
        """The study's filters: the batch's own (by Prolific filter id), the approval rate,
        the blocklist, the qualification's allowlist, earlier studies' participants out."""
        filters = [dict(f) for f in ctx.audience_filters]
        chosen = {f.get("filter_id") for f in filters}
        if ctx.min_approval_rate is not None and "approval_rate" not in chosen:
            filters.append({"filter_id": "approval_rate",
                            "selected_range": {"lower": ctx.min_approval_rate, "upper": 100}})
        filters.append({"filter_id": "participant_group_blocklist",
                        "selected_values": [self.blocklist_group()]})
        if ctx.qualification_type_id:
            filters.append({"filter_id": "participant_group_allowlist",
                            "selected_values": [ctx.qualification_type_id]})
        if ctx.exclude_units:
            filters.append({"filter_id": "previous_studies_blocklist",
                            "selected_values": list(ctx.exclude_units)})
        return filters

    def list_filter_sets(self) -> list[dict]:
        """The workspace's filter sets (id, name, eligible count) a batch may name."""
        answer = self._request("GET", "filter-sets/",
                               params={"workspace_id": settings.PROLIFIC_WORKSPACE_ID})
        return [{"id": s["id"], "name": s.get("name") or s["id"],
                 "eligible": s.get("eligible_participant_count")}
                for s in answer.get("results", []) if not s.get("is_deleted")]

    def filter_set(self, filter_set_id: str) -> dict:
        """One filter set with its current version and filters; a deleted one is refused."""
        found = self._request("GET", f"filter-sets/{filter_set_id}/")
        if found.get("is_deleted"):
            raise MarketplaceError(f"Prolific filter set {filter_set_id} was deleted; choose "
                                   "another on the launch page.", definite=True)
        return found

    def counted_filters(self, ctx: LaunchContext) -> list[dict]:
        """What the eligible count is asked about: the filter set's filters (when the batch
        names one) and the study's own, since Prolific applies both."""
        own = self.study_filters(ctx)
        if not ctx.filter_set_id:
            return own
        return [*self.filter_set(ctx.filter_set_id).get("filters", []), *own]

    def eligible_count(self, filters: list[dict]) -> int:
        answer = self._request("POST", "eligibility-count/", json={
            "filters": filters, "workspace_id": settings.PROLIFIC_WORKSPACE_ID},
            idempotent=True)  # a count changes nothing
        return int(answer.get("count", 0))

    def search_filters(self, keyword: str) -> list[dict]:
        """Prolific's filters whose title or question mentions ``keyword`` (for choosing)."""
        keyword = keyword.strip().lower()
        return [f for f in self._request("GET", "filters/").get("results", [])
                if keyword in f"{f.get('title', '')} {f.get('question', '')}".lower()]

    # --- pay ------------------------------------------------------------------------------
    def reward_recommendation(self) -> tuple[Decimal, Decimal]:
        """(minimum, recommended) hourly rate in the workspace currency's major unit, from
        Prolific (cached an hour), else from the settings when Prolific cannot be asked."""
        currency = settings.PROLIFIC_CURRENCY
        key = f"prolific:reward-recommendation:{currency}"
        cached = cache.get(key)
        if cached is not None:
            return Decimal(cached[0]), Decimal(cached[1])
        try:
            answer = self._request("GET", "reward-recommendations/", params={
                "workspace_id": settings.PROLIFIC_WORKSPACE_ID, "currency": currency})
            rows = answer if isinstance(answer, list) else answer.get("results", [])
            first = rows[0]  # Prolific: the first is the most recent
            # in minor units per hour, like study rewards
            pair = (Decimal(first["min_reward_per_hour"]) / 100,
                    Decimal(first["recommended_reward_per_hour"]) / 100)
        except (MarketplaceError, LookupError, TypeError, ValueError, ArithmeticError):
            return (Decimal(str(settings.PROLIFIC_MIN_HOURLY)),
                    Decimal(str(settings.PROLIFIC_RECOMMENDED_HOURLY)))
        cache.set(key, [str(pair[0]), str(pair[1])], RECOMMENDATIONS_TTL_S)
        return pair

    def pay_check(self, ctx: LaunchContext) -> PayCheck:
        minimum, recommended = self.reward_recommendation()
        return pay_check(reward=ctx.reward, estimated_minutes=ctx.estimated_minutes,
                         seconds_spent=list(ctx.seconds_spent), minimum=minimum,
                         recommended=recommended)

    # --- participant groups: blocklist per deployment, allowlist per qualification ---------
    def _group(self, name: str) -> str:
        params = {"workspace_id": settings.PROLIFIC_WORKSPACE_ID}
        for group in self._request("GET", "participant-groups/", params=params).get(
                "results", []):
            if group.get("name") == name:
                return group["id"]
        return self._request("POST", "participant-groups/", json={**params, "name": name})["id"]

    def blocklist_group(self) -> str:
        return self._group(BLOCKLIST_GROUP)

    def _members(self, method: str, group_id: str, participant_id: str) -> None:
        # adding or removing a member twice leaves the same group: safe to retry
        self._request(method, f"participant-groups/{group_id}/participants/",
                      json={"participant_ids": [participant_id]}, idempotent=True)

    def block(self, worker_id: str, reason: str) -> None:
        self._members("POST", self.blocklist_group(), worker_id)

    def unblock(self, worker_id: str, reason: str = "") -> None:
        self._members("DELETE", self.blocklist_group(), worker_id)

    def ensure_qualification_type(self, name: str, description: str) -> str:
        return self._group(f"vlmeval-qualified: {name}"[:100])

    def grant_qualification(self, qualification_type_id: str, worker_id: str) -> None:
        self._members("POST", qualification_type_id, worker_id)

    def revoke_qualification(self, qualification_type_id: str, worker_id: str,
                             reason: str) -> None:
        self._members("DELETE", qualification_type_id, worker_id)

    def launch_units(self, batch, tasks) -> list[HitSpec]:
        url = settings.PUBLIC_BASE_URL.rstrip("/") + reverse(
            "annotation:prolific_batch", args=[batch.uuid])
        places = sum(t.max_assignments for t in tasks)
        if not places:
            return []
        return [HitSpec(token=study_token(batch.uuid), url=url, max_assignments=places,
                        annotation=f"batch:{batch.uuid}")]

    def find_study(self, internal_name: str) -> dict | None:
        for study in self._request("GET", "studies/").get("results", []):
            if study.get("internal_name") == internal_name:
                return study
        return None

    def create_hit(self, spec: HitSpec, ctx: LaunchContext, prepared: str) -> CreatedHit:
        study = self.find_study(spec.token)
        existed = study is not None
        if study is None:
            study = self._request("POST", "studies/", json={
                "name": ctx.title, "internal_name": spec.token,
                "description": ctx.description or ctx.title,
                "external_study_url": f"{spec.url}?{_URL_PARAMS}",
                "prolific_id_option": "url_parameters",
                "completion_codes": [{"code": ctx.completion_code, "code_type": "COMPLETED",
                                      "actions": [{"action": "MANUALLY_REVIEW"}]},
                                     *self._screen_out_codes(ctx, spec.max_assignments)],
                "total_available_places": spec.max_assignments,
                "estimated_completion_time": ctx.estimated_minutes,
                "reward": int(Decimal(ctx.reward) * 100),
                "device_compatibility": (["desktop"] if ctx.desktop_only
                                         else ["desktop", "tablet", "mobile"]),
                "filters": self.study_filters(ctx),
                **self._filter_set_fields(ctx),
                **({"is_custom_screening": True} if ctx.screen_out_reward is not None else {}),
            })
        if study.get("status", "UNPUBLISHED") == "UNPUBLISHED":
            self._transition(study["id"], "PUBLISH")
        return CreatedHit(study["id"], already_existed=existed)

    @staticmethod
    def _screen_out_codes(ctx: LaunchContext, places: int) -> list[dict]:
        """In-study screening: one SCREENED_OUT code paying a fixed reward (in minor units),
        for at most every place of the study."""
        if ctx.screen_out_reward is None:
            return []
        return [{"code": screen_out_code(ctx.completion_code), "code_type": "SCREENED_OUT",
                 "actions": [{"action": "FIXED_SCREEN_OUT_PAYMENT",
                              "fixed_screen_out_reward": int(ctx.screen_out_reward * 100),
                              "slots": places}]}]

    def _filter_set_fields(self, ctx: LaunchContext) -> dict:
        """The study's filter set pinned to its current version (Prolific keeps the version a
        study was given, so a later edit of the set does not change a running batch)."""
        if not ctx.filter_set_id:
            return {}
        version = self.filter_set(ctx.filter_set_id).get("version")
        return {"filter_set_id": ctx.filter_set_id, "filter_set_version": version}

    def _transition(self, study_id: str, action: str) -> None:
        self._request("POST", f"studies/{study_id}/transition/", json={"action": action})

    def set_expiration(self, hit_id: str, at: datetime) -> None:
        raise NotSupported("Prolific studies have no expiry date; pause or stop them.")

    def pause(self, hit_id: str) -> None:
        self._transition(hit_id, "PAUSE")

    def resume(self, hit_id: str, until: datetime) -> None:
        self._transition(hit_id, "START")

    def expire(self, hit_id: str) -> None:
        self._transition(hit_id, "STOP")

    # --- results --------------------------------------------------------------------------
    def list_submissions(self, hit_id: str) -> Iterator[RemoteSubmission]:
        path, params = f"studies/{hit_id}/submissions/", None
        while path:
            page = self._request("GET", path, params=params)
            for s in page.get("results", []):
                yield RemoteSubmission(
                    external_id=s["id"], hit_id=hit_id,
                    worker_id=s.get("participant_id") or s.get("participant", ""),
                    status=statuses.normalised(s.get("status", "")),
                    submitted_at=s.get("completed_at"),
                )
            path = ((page.get("_links") or {}).get("next") or {}).get("href") or ""

    def approve(self, assignment_id: str, feedback: str = "", *,
                override_rejection: bool = False) -> None:
        if override_rejection:
            raise NotSupported("Prolific cannot approve rejected work")
        # Prolific documents this transition as idempotent, so it may be retried.
        self._request("POST", f"submissions/{assignment_id}/transition/",
                      json={"action": "APPROVE"}, idempotent=True)

    def reject(self, assignment_id: str, reason: str, *, category: str = "FAILED_CHECK") -> None:
        """Checked against Prolific's rules first: a refusal is raised before any call."""
        try:
            message, category = statuses.rejection_message(reason, category)
        except statuses.RejectionRefused as exc:
            raise MarketplaceError(str(exc), definite=True) from exc
        self._request("POST", f"submissions/{assignment_id}/transition/", json={
            "action": "REJECT", "message": message, "rejection_category": category})

    def send_bonus(self, *, worker_id: str, assignment_id: str, amount: Decimal, reason: str,
                   token: str, hit_id: str = "") -> str:
        setup = self._request("POST", "submissions/bonus-payments/", json={
            "study_id": hit_id, "csv_bonuses": f"{assignment_id},{Decimal(amount):.2f}\n"})
        self._request("POST", f"bulk-bonus-payments/{setup['id']}/pay/")
        return setup["id"]
