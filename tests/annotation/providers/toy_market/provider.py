"""The toy marketplace's ``Provider``: one unit per task, a 10 % fee on rewards and bonuses."""
from decimal import Decimal

from django.conf import settings
from django.urls import reverse

from annotation.providers.base import CreatedHit, HitSpec, Provider, register
from annotation.providers.costs import FeeSchedule

from .market import MARKET

FEE_RATE = Decimal("0.10")


@register
class ToyProvider(Provider):
    name = "toy"
    paid = True
    urls = "tests.annotation.providers.toy_market.urls"

    def fees(self) -> FeeSchedule:
        return FeeSchedule(kind="rate", rate=FEE_RATE)

    def launch_units(self, batch, tasks) -> list[HitSpec]:
        base = settings.PUBLIC_BASE_URL.rstrip("/")
        return [HitSpec(token=f"toy-{task.uuid.hex}", task_id=task.pk,
                        url=base + reverse("annotation:toy_task", args=[task.uuid]),
                        max_assignments=task.max_assignments, annotation=f"task:{task.uuid}")
                for task in tasks]

    def create_hit(self, spec, ctx, prepared) -> CreatedHit:
        unit = MARKET.units.setdefault(spec.token, f"UNIT{len(MARKET.units) + 1}")
        MARKET.pages[unit] = spec.url
        return CreatedHit(unit)

    def list_submissions(self, hit_id):
        return iter([s for s in MARKET.submissions.values() if s.hit_id == hit_id])

    def approve(self, assignment_id, feedback="", *, override_rejection=False) -> None:
        super().approve(assignment_id, feedback, override_rejection=override_rejection)
        MARKET.approved.append(assignment_id)

    def send_bonus(self, *, worker_id, assignment_id, amount, reason, token, hit_id="") -> str:
        MARKET.bonuses.append((worker_id, assignment_id, amount))
        return f"paid-{token}"
