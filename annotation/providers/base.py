"""The provider interface every marketplace implements (its subpackage's ``provider`` module
subclasses ``Provider`` and ``register``s it).

A provider only talks to its marketplace; it never writes to our database. The services in
``services/`` decide what to call, record the outcome, and keep calls outside transactions.
Arrival is the provider's too: ``urls`` names the URL module of the pages the marketplace sends
workers to (and any hooks it calls), mounted at ``ext/<name>/``; their views claim through
``services.arrivals`` (or the marketplace's own arrival service) and hand over to the engine's
task page.
"""
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from annotation.core.clients.errors import NotSupported
from annotation.core.marketplaces import get_provider, register  # noqa: F401  (the registry)
from annotation.providers.costs import CostEstimate, FeeSchedule, estimate


@dataclass(frozen=True)
class HitSpec:
    """One unit to publish: a HIT per task (MTurk) or one study per batch (Prolific)."""

    token: str  # deterministic UniqueRequestToken / internal name
    url: str  # our page the marketplace sends workers to
    max_assignments: int
    annotation: str  # our id, stored on the marketplace for look-ups
    task_id: int | None = None


@dataclass(frozen=True)
class CreatedHit:
    external_id: str
    hit_type_id: str = ""
    expires_at: datetime | None = None
    already_existed: bool = False


#: Normalised statuses whose place went back to the marketplace: our lease is released.
RELEASES_PLACE = frozenset({"returned", "timed_out", "screened_out"})


@dataclass(frozen=True)
class RemoteSubmission:
    """A marketplace's record of one assignment, normalised across providers."""

    external_id: str
    hit_id: str
    worker_id: str
    # "submitted" | "approved" | "rejected" | "other"; Prolific also: "active" (a place held),
    # "returned" | "timed_out" | "screened_out" (the place went back to its pool)
    status: str
    submitted_at: datetime | None = None


@dataclass(frozen=True)
class LaunchContext:
    """Everything a provider needs to publish a batch (read from the DB by the service)."""

    title: str
    description: str
    keywords: str
    reward: Decimal
    assignments_per_task: int
    lease_seconds: int
    lifetime_seconds: int
    auto_approval_seconds: int
    min_approval_rate: int | None
    locales: tuple[str, ...]
    qualification_type_id: str = ""
    estimated_minutes: int = 5
    completion_code: str = ""
    production_confirmed: bool = False
    places: int = 0  # assignments the launch publishes (one participant each on Prolific)
    audience_filters: tuple[dict, ...] = ()  # the marketplace's own filters, by id
    filter_set_id: str = ""  # a Prolific filter set applied beside those filters
    exclude_units: tuple[str, ...] = ()  # earlier batches' units whose workers are kept out
    seconds_spent: tuple[float, ...] = ()  # measured times of the batch's submitted work
    desktop_only: bool = False  # the HIT type needs a large screen
    screen_out_reward: Decimal | None = None  # Prolific: fixed pay of a screened-out place
    screening_minutes: int = 1


class Provider:
    """Operations on one marketplace. Local work needs none of them, so defaults are no-ops."""

    name = "local"
    paid = False  # True: real money moves, so a budget is required
    bonus_idempotent = True  # a retried bonus with the same token can never pay twice
    can_block = False  # True when ``block`` / ``unblock`` reach the marketplace
    # Arrival: the dotted path of a URL module (``app_name``-less, so its names join the
    # ``annotation`` namespace) that ``annotation/urls.py`` mounts at ``ext/<name>/``; ""
    # when workers never arrive from outside (local accounts log in).
    urls = ""
    # Where the engine's after-submit page posts ``<submit_to>/mturk/externalSubmit`` when it
    # is the marketplace's own site (the pages' CSP ``form-action`` allows these).
    submit_hosts: tuple[str, ...] = ()

    def fees(self) -> FeeSchedule:
        return FeeSchedule()

    def estimate(self, *, reward: Decimal, assignments: int, assignments_per_hit: int,
                 bonuses: list[Decimal] = (), fees: FeeSchedule | None = None) -> CostEstimate:
        """``assignments`` paid assignments plus ``bonuses``, this marketplace's fees (or
        ``fees``: a study prices local work at its own rate) included (what the engine's cost
        figures ask for)."""
        return estimate(reward=reward, assignments=assignments,
                        assignments_per_hit=assignments_per_hit, fees=fees or self.fees(),
                        bonuses=bonuses)

    def paid_outside_assignments(self, batch_ids) -> dict[int, tuple[Decimal, int]]:
        """``{batch id: (reward, places)}``: places this marketplace paid that no assignment
        of ours holds (Prolific: participants screened out at a fixed reward); the engine adds
        them, fees included, to what a batch spent. None here."""
        return {}

    def upload_note(self, batch) -> tuple[str, bool] | None:
        """What a new batch's upload should say about this marketplace (the text, whether it
        warns); None: nothing."""
        return None

    # --- the launch page (admin and console ask these; none names a marketplace) -----------
    def production(self) -> bool:
        """Whether a launch reaches the live marketplace with real money, so the launch page
        asks for a second confirmation."""
        return False

    def endpoint(self) -> str:
        """The API address the launch page shows with its sandbox / production banner; ""
        shows none."""
        return ""

    def launch_facts(self, batch):
        """What the launch page shows beside the estimate, asked of the marketplace (Prolific:
        pay, eligible audience, filter sets); None: nothing."""
        return None

    def check_ready(self, ctx: LaunchContext) -> None:
        """Raise ``MarketplaceError`` when a launch cannot go ahead (settings, confirmation)."""

    def launch_units(self, batch, tasks) -> list[HitSpec]:
        return []

    def prepare(self, ctx: LaunchContext) -> str:
        """Provider-wide set-up before the units (MTurk: the HIT type). Returns its id."""
        return ""

    def create_hit(self, spec: HitSpec, ctx: LaunchContext, prepared: str) -> CreatedHit:
        raise NotSupported(f"{self.name} publishes nothing")

    def set_expiration(self, hit_id: str, at: datetime) -> None:
        """Expire (``at`` in the past) or extend a published unit."""

    def pause(self, hit_id: str) -> None:
        """Stop new workers from arriving; submissions in progress may finish."""

    def resume(self, hit_id: str, until: datetime) -> None:
        """Reopen a paused unit until ``until``."""

    def expire(self, hit_id: str) -> None:
        """Close a unit for good."""

    def list_submissions(self, hit_id: str) -> Iterator[RemoteSubmission]:
        return iter(())

    def approve(self, assignment_id: str, feedback: str = "", *,
                override_rejection: bool = False) -> None:
        """Approve (pay) a submission; with ``override_rejection`` a rejected one too. Already
        approved counts as success."""
        if override_rejection:
            raise NotSupported(f"{self.name} cannot approve rejected work")

    def reject(self, assignment_id: str, reason: str) -> None:
        """Reject a submission with a reason the worker sees. Already rejected is success."""

    def send_bonus(self, *, worker_id: str, assignment_id: str, amount: Decimal, reason: str,
                   token: str, hit_id: str = "") -> str:
        """Pay a bonus once per ``token``; returns the provider's reference (may be "")."""
        return ""

    def ensure_qualification_type(self, name: str, description: str) -> str:
        raise NotSupported(f"{self.name} has no qualification types")

    def grant_qualification(self, qualification_type_id: str, worker_id: str) -> None:
        raise NotSupported(f"{self.name} has no qualifications")

    def revoke_qualification(self, qualification_type_id: str, worker_id: str,
                             reason: str) -> None:
        raise NotSupported(f"{self.name} has no qualifications")

    def block(self, worker_id: str, reason: str) -> None:
        """Block on the marketplace's side too (our own ``Worker.blocked`` flag is set by the
        service either way); a marketplace without such a call says so."""
        raise NotSupported(f"{self.name} cannot block workers")

    def unblock(self, worker_id: str, reason: str = "") -> None:
        """See ``block``."""
        raise NotSupported(f"{self.name} cannot unblock workers")

    def notify(self, worker_ids: list[str], subject: str, message: str) -> list[str]:
        """Message workers; returns the ids that could not be notified."""
        raise NotSupported(f"{self.name} cannot message workers")
