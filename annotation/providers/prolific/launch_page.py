"""What the admin's upload and launch pages show for a Prolific batch before and after launching: the
hourly rate the reward implies against Prolific's minimum and recommendation, how many
participants match the audience against the places needed, and the study's Prolific link.
Each figure is asked of Prolific as the launch itself would ask it."""
from dataclasses import dataclass, field

from annotation.core.clients.errors import MarketplaceError
from annotation.models import Batch, ProviderHit
from annotation.providers.prolific.pay import PayCheck
from annotation.providers.services.common import launch_context

STUDY_PAGE = "https://app.prolific.com/researcher/workspaces/studies/{}"


@dataclass
class ProlificLaunchFacts:
    pay: PayCheck | None = None
    eligible: int | None = None
    places: int = 0
    study_links: list[str] = field(default_factory=list)
    filter_sets: list[dict] = field(default_factory=list)  # the workspace's, as listed
    filter_set_id: str = ""  # the batch's chosen set
    errors: list[str] = field(default_factory=list)

    def filter_set_choices(self) -> list[tuple[str, str]]:
        """The listed sets with their eligible counts; the chosen one stays choosable even
        when Prolific could not list it just now."""
        choices = [(s["id"], f"{s['name']} ({s['eligible']} eligible)"
                    if s["eligible"] is not None else s["name"]) for s in self.filter_sets]
        if self.filter_set_id and self.filter_set_id not in dict(choices):
            choices.append((self.filter_set_id, f"{self.filter_set_id} (not listed now)"))
        return choices


def prolific_launch_facts(batch: Batch, provider) -> ProlificLaunchFacts:
    """A qualification's allowlist group counts once it exists (the launch makes it); the
    deployment's blocklist group is found, or made once, as the launch would. ``provider``: the
    ``ProlificProvider`` asking (``ProlificProvider.launch_facts``)."""
    qualification = batch.required_qualification
    ctx = launch_context(batch, qualification_type_id=(
        (qualification.provider_ids or {}).get("prolific", "") if qualification else ""))
    facts = ProlificLaunchFacts(places=ctx.places, filter_set_id=ctx.filter_set_id, study_links=[
        STUDY_PAGE.format(study) for study in ProviderHit.objects.filter(batch=batch)
        .exclude(external_id="").values_list("external_id", flat=True)])
    try:
        facts.filter_sets = provider.list_filter_sets()
        facts.pay = provider.pay_check(ctx)
        facts.eligible = provider.eligible_count(provider.counted_filters(ctx))
    except MarketplaceError as exc:
        facts.errors.append(str(exc))
    return facts
