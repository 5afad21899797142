"""What the admin's upload and launch pages show for a Prolific batch before and after launching: the
hourly rate the reward implies against Prolific's minimum and recommendation, how many
participants match the audience against the places needed, and the study's Prolific link.
Each figure is asked of Prolific as the launch itself would ask it."""
from dataclasses import dataclass, field
from decimal import Decimal

from django.conf import settings

from annotation.core.clients.errors import MarketplaceError
from annotation.models import Batch, ProviderHit
from annotation.providers.prolific import ProlificProvider
from annotation.providers.prolific.pay import PayCheck, pay_check
from annotation.providers.services.common import launch_context

STUDY_PAGE = "https://app.prolific.com/researcher/workspaces/studies/{}"


@dataclass
class ProlificLaunchFacts:
    pay: PayCheck | None = None
    eligible: int | None = None
    places: int = 0
    study_links: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def prolific_launch_facts(batch: Batch, provider: ProlificProvider | None = None
                          ) -> ProlificLaunchFacts:
    """A qualification's allowlist group counts once it exists (the launch makes it); the
    deployment's blocklist group is found, or made once, as the launch would."""
    qualification = batch.required_qualification
    ctx = launch_context(batch, qualification_type_id=(
        (qualification.provider_ids or {}).get("prolific", "") if qualification else ""))
    provider = provider or ProlificProvider()
    facts = ProlificLaunchFacts(places=ctx.places, study_links=[
        STUDY_PAGE.format(study) for study in ProviderHit.objects.filter(batch=batch)
        .exclude(external_id="").values_list("external_id", flat=True)])
    try:
        facts.pay = provider.pay_check(ctx)
        facts.eligible = provider.eligible_count(provider.study_filters(ctx))
    except MarketplaceError as exc:
        facts.errors.append(str(exc))
    return facts


def upload_pay_note(batch: Batch, estimated_minutes: int) -> tuple[str, bool]:
    """(what the upload says about the new batch's hourly pay, whether it is below the floor).
    No call to Prolific at upload: the floor here is the setting; the launch asks Prolific."""
    check = pay_check(reward=batch.reward, estimated_minutes=estimated_minutes,
                      seconds_spent=[], minimum=Decimal(settings.PROLIFIC_MIN_HOURLY),
                      recommended=Decimal(settings.PROLIFIC_RECOMMENDED_HOURLY))
    if check.below_minimum:
        return check.refusal().replace("Pay below", "The launch will be refused: pay below"), True
    if check.below_recommended:
        return check.warning(), True
    return f"On Prolific: {check.describe()}.", False
