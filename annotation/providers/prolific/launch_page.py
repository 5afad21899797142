"""What the admin's launch page shows for a Prolific batch before and after launching: the
hourly rate the reward implies against Prolific's minimum and recommendation, how many
participants match the audience against the places needed, and the study's Prolific link.
Read-only: each figure is asked of Prolific as the launch itself would ask it."""
from dataclasses import dataclass, field

from annotation.core.clients.errors import MarketplaceError
from annotation.models import Batch, ProviderHit
from annotation.providers.prolific import ProlificProvider
from annotation.providers.prolific.pay import PayCheck

STUDY_PAGE = "https://app.prolific.com/researcher/workspaces/studies/{}"


@dataclass
class ProlificLaunchFacts:
    pay: PayCheck | None = None
    eligible: int | None = None
    places: int = 0
    study_links: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def prolific_launch_facts(batch: Batch, ctx, provider: ProlificProvider | None = None
                          ) -> ProlificLaunchFacts:
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
