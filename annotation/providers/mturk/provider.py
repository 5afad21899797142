"""Mechanical Turk provider: a HIT type per batch, one ExternalQuestion HIT per task.

Idempotency: each HIT is created with a ``UniqueRequestToken`` derived from our ids, so a
re-run launch gets MTurk's "already exists" error (carrying the HIT id) instead of a duplicate;
bonuses carry a token derived from our bonus row. MTurk forgets tokens after 24 hours, so the
launch service also looks HITs up by ``RequesterAnnotation`` before re-sending an old request.
"""
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from xml.sax.saxutils import escape

from django.conf import settings
from django.urls import reverse

from annotation.core.clients.errors import MarketplaceError, ProductionNotConfirmed
from annotation.providers.base import (
    CreatedHit,
    HitSpec,
    LaunchContext,
    Provider,
    RemoteSubmission,
    register,
)
from annotation.providers.mturk import client as mturk_client
from annotation.providers.mturk.fees import MTurkFees

APPROVAL_RATE_QUAL = "000000000000000000L0"
LOCALE_QUAL = "00000000000000000071"
_EXTERNAL_QUESTION = (
    '<ExternalQuestion xmlns="http://mechanicalturk.amazonaws.com/'
    'AWSMechanicalTurkDataSchemas/2006-07-14/ExternalQuestion.xsd">'
    "<ExternalURL>{url}</ExternalURL><FrameHeight>0</FrameHeight></ExternalQuestion>"
)
_HIT_ID = re.compile(r"\b[A-Z0-9]{20,40}\b")
_STATUS = {"Submitted": "submitted", "Approved": "approved", "Rejected": "rejected"}


def hit_token(task_uuid, round_no: int = 1) -> str:
    """Deterministic UniqueRequestToken of a task's HIT (≤ 64 characters)."""
    return f"hit-{task_uuid.hex}-{round_no}"


def external_question(url: str) -> str:
    return _EXTERNAL_QUESTION.format(url=escape(url))


def money(amount: Decimal) -> str:
    return f"{Decimal(amount):.2f}"


@register
class MTurkProvider(Provider):
    name = "mturk"
    paid = True
    bonus_idempotent = True
    can_block = True  # CreateWorkerBlock / DeleteWorkerBlock
    urls = "annotation.providers.mturk.urls"  # the ExternalQuestion's task page
    submit_hosts = ("https://www.mturk.com", "https://workersandbox.mturk.com")

    def __init__(self, client=None):
        self._client = client
        self._launch: LaunchContext | None = None

    # --- plumbing -------------------------------------------------------------------------
    def client(self):
        """Launches need the production confirmation; later calls act on confirmed HITs."""
        if self._client is None:
            self._client = mturk_client.make_client(
                launch=self._launch is not None,
                production_confirmed=bool(self._launch and self._launch.production_confirmed),
            )
        return self._client

    def _call(self, operation: str, **params) -> dict:
        return mturk_client.call(self.client(), operation, **params)

    def fees(self) -> MTurkFees:
        return MTurkFees()

    def production(self) -> bool:
        return mturk_client.is_production()

    def endpoint(self) -> str:
        return mturk_client.endpoint()

    # --- launch ---------------------------------------------------------------------------
    def check_ready(self, ctx: LaunchContext) -> None:
        if not settings.PUBLIC_BASE_URL.startswith("https://"):
            raise MarketplaceError("PUBLIC_BASE_URL must be an https address for MTurk's "
                                f"ExternalQuestion (it is {settings.PUBLIC_BASE_URL!r}).")
        self._launch = ctx
        if mturk_client.is_production() and not ctx.production_confirmed:
            raise ProductionNotConfirmed(
                "MTURK_PRODUCTION is on: confirm that this launch spends real money.")

    def launch_units(self, batch, tasks) -> list[HitSpec]:
        base = settings.PUBLIC_BASE_URL.rstrip("/")
        return [
            HitSpec(
                token=hit_token(task.uuid), task_id=task.pk,
                url=base + reverse("annotation:mturk_task", args=[task.uuid]),
                max_assignments=task.max_assignments, annotation=f"task:{task.uuid}",
            )
            for task in tasks
        ]

    def qualification_requirements(self, ctx: LaunchContext) -> list[dict]:
        requirements = []
        if ctx.qualification_type_id:
            requirements.append({"QualificationTypeId": ctx.qualification_type_id,
                                 "Comparator": "Exists",
                                 "ActionsGuarded": "DiscoverPreviewAndAccept"})
        if ctx.min_approval_rate is not None:
            requirements.append({"QualificationTypeId": APPROVAL_RATE_QUAL,
                                 "Comparator": "GreaterThanOrEqualTo",
                                 "IntegerValues": [int(ctx.min_approval_rate)],
                                 "ActionsGuarded": "Accept"})
        if ctx.locales:
            requirements.append({"QualificationTypeId": LOCALE_QUAL, "Comparator": "In",
                                 "LocaleValues": [{"Country": c} for c in ctx.locales],
                                 "ActionsGuarded": "Accept"})
        return requirements

    def prepare(self, ctx: LaunchContext) -> str:
        """CreateHITType is itself idempotent: equal parameters give back the same id."""
        params = {
            "AutoApprovalDelayInSeconds": ctx.auto_approval_seconds,
            "AssignmentDurationInSeconds": ctx.lease_seconds,
            "Reward": money(ctx.reward),
            "Title": ctx.title[:128],
            "Keywords": ctx.keywords,
            "Description": (ctx.description or ctx.title)[:2000],
            "QualificationRequirements": self.qualification_requirements(ctx),
        }
        return self._call("create_hit_type", **params)["HITTypeId"]

    def create_hit(self, spec: HitSpec, ctx: LaunchContext, prepared: str) -> CreatedHit:
        try:
            hit = self._call(
                "create_hit_with_hit_type", HITTypeId=prepared,
                MaxAssignments=spec.max_assignments, LifetimeInSeconds=ctx.lifetime_seconds,
                Question=external_question(spec.url), RequesterAnnotation=spec.annotation,
                UniqueRequestToken=spec.token,
            )["HIT"]
        except mturk_client.MTurkError as exc:
            if not _already_exists(exc):
                raise
            hit_id = self._existing_hit_id(exc, spec)
            hit = self._call("get_hit", HITId=hit_id)["HIT"]
            return CreatedHit(hit["HITId"], hit.get("HITTypeId", prepared),
                              hit.get("Expiration"), already_existed=True)
        return CreatedHit(hit["HITId"], hit.get("HITTypeId", prepared), hit.get("Expiration"))

    def _existing_hit_id(self, exc, spec: HitSpec) -> str:
        match = _HIT_ID.search(str(exc).split(":", 2)[-1])
        if match:
            return match.group(0)
        found = self.find_hit(spec.annotation)
        if not found:
            raise MarketplaceError(f"MTurk says the HIT for {spec.annotation} exists, "
                                "but it could not be found") from exc
        return found

    def find_hit(self, annotation: str) -> str:
        """The id of our HIT with this RequesterAnnotation, paging through ListHITs."""
        token = None
        while True:
            page = self._call("list_hits", MaxResults=100, **({"NextToken": token} if token else {}))
            for hit in page.get("HITs", []):
                if hit.get("RequesterAnnotation") == annotation:
                    return hit["HITId"]
            token = page.get("NextToken")
            if not token or not page.get("HITs"):
                return ""

    # --- life cycle -----------------------------------------------------------------------
    def set_expiration(self, hit_id: str, at: datetime) -> None:
        self._call("update_expiration_for_hit", HITId=hit_id, ExpireAt=at)

    def pause(self, hit_id: str) -> None:
        # MTurk has no pause: expiring takes the HIT off the market; it can be extended later.
        self.set_expiration(hit_id, datetime(2015, 1, 1, tzinfo=UTC))

    def resume(self, hit_id: str, until: datetime) -> None:
        self.set_expiration(hit_id, until)

    def expire(self, hit_id: str) -> None:
        self.set_expiration(hit_id, datetime(2015, 1, 1, tzinfo=UTC))

    # --- results --------------------------------------------------------------------------
    def list_submissions(self, hit_id: str) -> Iterator[RemoteSubmission]:
        token = None
        while True:
            params = {"HITId": hit_id, "MaxResults": 100,
                      "AssignmentStatuses": ["Submitted", "Approved", "Rejected"]}
            if token:
                params["NextToken"] = token
            page = self._call("list_assignments_for_hit", **params)
            for a in page.get("Assignments", []):
                yield RemoteSubmission(
                    external_id=a["AssignmentId"], hit_id=a.get("HITId", hit_id),
                    worker_id=a.get("WorkerId", ""),
                    status=_STATUS.get(a.get("AssignmentStatus", ""), "other"),
                    submitted_at=a.get("SubmitTime"),
                )
            token = page.get("NextToken")
            if not token or not page.get("Assignments"):
                return

    def _remote_status(self, assignment_id: str) -> str:
        a = self._call("get_assignment", AssignmentId=assignment_id)["Assignment"]
        return _STATUS.get(a.get("AssignmentStatus", ""), "other")

    def approve(self, assignment_id: str, feedback: str = "", *,
                override_rejection: bool = False) -> None:
        params = {"AssignmentId": assignment_id}
        if feedback:
            params["RequesterFeedback"] = feedback[:1024]
        if override_rejection:
            params["OverrideRejection"] = True
        try:
            self._call("approve_assignment", **params)
        except mturk_client.MTurkError as exc:
            if exc.code != "RequestError" or self._remote_status(assignment_id) != "approved":
                raise

    def reject(self, assignment_id: str, reason: str) -> None:
        try:
            self._call("reject_assignment", AssignmentId=assignment_id,
                       RequesterFeedback=reason[:1024])
        except mturk_client.MTurkError as exc:
            if exc.code != "RequestError" or self._remote_status(assignment_id) != "rejected":
                raise

    def send_bonus(self, *, worker_id: str, assignment_id: str, amount: Decimal, reason: str,
                   token: str, hit_id: str = "") -> str:
        try:
            self._call("send_bonus", WorkerId=worker_id, BonusAmount=money(amount),
                       AssignmentId=assignment_id, Reason=reason[:1024], UniqueRequestToken=token)
        except mturk_client.MTurkError as exc:
            if not _already_processed(exc):
                raise
        return token

    # --- workers --------------------------------------------------------------------------
    def ensure_qualification_type(self, name: str, description: str) -> str:
        qt = self._call("create_qualification_type", Name=name[:128],
                        Description=(description or name)[:2000],
                        QualificationTypeStatus="Active")["QualificationType"]
        return qt["QualificationTypeId"]

    def grant_qualification(self, qualification_type_id: str, worker_id: str) -> None:
        self._call("associate_qualification_with_worker",
                   QualificationTypeId=qualification_type_id, WorkerId=worker_id,
                   IntegerValue=1, SendNotification=False)

    def revoke_qualification(self, qualification_type_id: str, worker_id: str,
                             reason: str) -> None:
        self._call("disassociate_qualification_from_worker",
                   QualificationTypeId=qualification_type_id, WorkerId=worker_id,
                   Reason=reason[:1024])

    def block(self, worker_id: str, reason: str) -> None:
        self._call("create_worker_block", WorkerId=worker_id, Reason=reason[:1024])

    def unblock(self, worker_id: str, reason: str = "") -> None:
        self._call("delete_worker_block", WorkerId=worker_id,
                   **({"Reason": reason[:1024]} if reason else {}))

    def notify(self, worker_ids: list[str], subject: str, message: str) -> list[str]:
        failed = []
        for start in range(0, len(worker_ids), 100):  # NotifyWorkers takes at most 100 ids
            out = self._call("notify_workers", Subject=subject[:200], MessageText=message[:4096],
                             WorkerIds=worker_ids[start:start + 100])
            failed += [f["WorkerId"] for f in out.get("NotifyWorkersFailureStatuses", [])]
        return failed


def _already_exists(exc) -> bool:
    return "HitAlreadyExists" in exc.turk_code or (
        exc.code == "RequestError" and "already exists" in str(exc).lower()
    )


def _already_processed(exc) -> bool:
    text = str(exc).lower()
    return exc.code == "RequestError" and (
        "already been processed" in text or "already exists" in text
        or "Duplicate" in exc.turk_code or "AlreadyExists" in exc.turk_code
    )

