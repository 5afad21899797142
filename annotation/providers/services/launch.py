"""Publishing a batch on its marketplace and the units' life cycle: pause, resume, extend,
expire. A unit's row is written before the call that publishes it, so a re-run resumes."""
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.utils import timezone

from annotation.core.clients.errors import MarketplaceError
from annotation.engine.services.batches import batch_set_status
from annotation.models import Batch, Task
from annotation.providers.base import (
    Provider,
    get_provider,
)
from annotation.providers.models import (
    ProviderHit,
)
from annotation.providers.services.common import (
    TOKEN_MEMORY,
    LaunchIncomplete,
    LaunchReport,
    action_log,
    config_for,
    launch_context,
    launch_guard,
    qualification_type_id,
    require_outside_transaction,
)


def batch_filter_set_choose(batch: Batch, filter_set_id: str, *, actor: str = "",
                            provider: Provider | None = None) -> None:
    """Name the Prolific filter set a batch's study uses ("" for none). The id must be one of
    the workspace's sets as Prolific lists them now; otherwise nothing is written."""
    require_outside_transaction()
    filter_set_id = (filter_set_id or "").strip()
    if batch.provider != "prolific":
        raise ValidationError("Only a Prolific batch can use a filter set.")
    if filter_set_id:
        provider = provider or get_provider(batch.provider)
        known = {s["id"] for s in provider.list_filter_sets()}
        if filter_set_id not in known:
            raise ValidationError(f"Prolific has no filter set {filter_set_id!r} in this "
                                  "workspace.")
    config = config_for(batch)
    config.audience_filter_set_id = filter_set_id
    config.full_clean(exclude=["batch"])
    type(config).objects.filter(pk=config.pk).update(audience_filter_set_id=filter_set_id)
    action_log(batch, "prolific", "filter_set", target=filter_set_id or "none", ok=True,
               actor=actor)


def batch_launch(batch: Batch, *, actor: str = "", production_confirmed: bool = False,
                 provider: Provider | None = None) -> LaunchReport:
    """Open the batch and publish one unit per task (MTurk) or per batch (Prolific).

    Idempotent: units already published are skipped; a unit whose request went out but whose
    answer was lost is recovered through its deterministic token.
    """
    require_outside_transaction()
    provider = provider or get_provider(batch.provider)
    if batch.status == Batch.Status.FINISHED:
        raise ValidationError("A finished batch cannot be launched again.")
    qualification_type = ""
    if batch.required_qualification_id and provider.paid:
        qualification_type = qualification_type_id(provider, batch.required_qualification)
    ctx = launch_context(batch, production_confirmed=production_confirmed,
                         qualification_type_id=qualification_type)
    provider.check_ready(ctx)
    launch_guard(batch)
    if batch.status in (Batch.Status.DRAFT, Batch.Status.PAUSED):
        batch_set_status(batch, Batch.Status.ACTIVE)
    units = provider.launch_units(batch, list(Task.objects.filter(batch=batch)))
    report = LaunchReport(total=len(units))
    known = {h.token: h for h in ProviderHit.objects.filter(batch=batch)}
    todo = [u for u in units if not (u.token in known and known[u.token].external_id)]
    report.reused = len(units) - len(todo)
    if not todo:
        return report
    prepared = provider.prepare(ctx)
    for unit in todo:
        hit = known.get(unit.token)
        now = timezone.now()
        if hit is None:
            hit = ProviderHit.objects.create(
                batch=batch, task_id=unit.task_id, provider=provider.name, token=unit.token,
                max_assignments=unit.max_assignments, created_at=now, updated_at=now)
        try:
            found = ""
            if now - hit.created_at > TOKEN_MEMORY and hasattr(provider, "find_hit"):
                found = provider.find_hit(unit.annotation)
            if found:
                created_id, hit_type, expires, reused = found, prepared, None, True
            else:
                created = provider.create_hit(unit, ctx, prepared)
                created_id, hit_type = created.external_id, created.hit_type_id
                expires, reused = created.expires_at, created.already_existed
        except MarketplaceError as exc:
            action_log(batch, provider.name, "launch", unit.annotation, False, exc, actor)
            raise LaunchIncomplete(
                f"Published {report.created + report.reused} of {report.total} units of "
                f"“{batch.title}”, then: {exc}. Run the launch again to resume.",
                definite=exc.definite) from exc
        ProviderHit.objects.filter(pk=hit.pk).update(
            external_id=created_id, hit_type_id=hit_type or prepared,
            status=ProviderHit.Status.LIVE, updated_at=timezone.now(),
            expires_at=expires or now + timedelta(seconds=ctx.lifetime_seconds))
        if unit.task_id:
            Task.objects.filter(pk=unit.task_id).update(provider_hit_id=created_id)
        report.reused += int(reused)
        report.created += int(not reused)
        action_log(batch, provider.name, "launch", f"{unit.annotation} → {created_id}", True,
             "found by token" if reused else "created", actor)
    return report


def _each_hit(batch: Batch, statuses, action: str, call, new_status: str, actor: str,
              **update) -> list[str]:
    provider = get_provider(batch.provider)
    errors = []
    for hit in ProviderHit.objects.filter(batch=batch, status__in=statuses).exclude(external_id=""):
        try:
            call(provider, hit)
        except MarketplaceError as exc:
            errors.append(f"{hit.external_id}: {exc}")
            action_log(batch, provider.name, action, hit.external_id, False, exc, actor)
            continue
        ProviderHit.objects.filter(pk=hit.pk).update(status=new_status,
                                                     updated_at=timezone.now(), **update)
        action_log(batch, provider.name, action, hit.external_id, True, "", actor)
    return errors


def batch_pause(batch: Batch, *, actor: str = "") -> list[str]:
    """Stop new arrivals: our batch first (arrivals are refused at once), then the marketplace."""
    require_outside_transaction()
    if batch.status == Batch.Status.ACTIVE:
        batch_set_status(batch, Batch.Status.PAUSED)
    return _each_hit(batch, [ProviderHit.Status.LIVE], "pause",
                     lambda p, h: p.pause(h.external_id), ProviderHit.Status.PAUSED, actor)


def batch_resume(batch: Batch, *, actor: str = "") -> list[str]:
    require_outside_transaction()
    until = timezone.now() + timedelta(seconds=config_for(batch).lifetime_seconds)
    errors = _each_hit(batch, [ProviderHit.Status.PAUSED], "resume",
                       lambda p, h: p.resume(h.external_id, until), ProviderHit.Status.LIVE,
                       actor, expires_at=until)
    if batch.status == Batch.Status.PAUSED:
        batch_set_status(batch, Batch.Status.ACTIVE)
    return errors


def batch_extend(batch: Batch, *, seconds: int, actor: str = "") -> list[str]:
    """Push the expiry of every live unit to ``seconds`` from now (MTurk)."""
    require_outside_transaction()
    until = timezone.now() + timedelta(seconds=seconds)
    return _each_hit(batch, [ProviderHit.Status.LIVE], "extend",
                     lambda p, h: p.set_expiration(h.external_id, until),
                     ProviderHit.Status.LIVE, actor, expires_at=until)


def batch_expire(batch: Batch, *, actor: str = "") -> list[str]:
    """Close the batch for good, here and on the marketplace. Submitted work can still sync."""
    require_outside_transaction()
    if batch.status != Batch.Status.FINISHED and batch.status != Batch.Status.DRAFT:
        batch_set_status(batch, Batch.Status.FINISHED)
    return _each_hit(batch, [ProviderHit.Status.LIVE, ProviderHit.Status.PAUSED], "expire",
                     lambda p, h: p.expire(h.external_id), ProviderHit.Status.EXPIRED, actor,
                     expires_at=timezone.now())
