"""Paying the workers of a local batch: this system moves no money for local accounts, so the
admin pays outside it (a transfer, a gift card) and records the payout here, once per click,
for exactly what the worker is owed at that moment. Marketplace work is paid by approving it
(and bonuses by ``worker_bonus``), never by this."""
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from annotation.models import Batch, Worker
from annotation.providers.models import LocalPayout
from annotation.providers.selectors_payments import local_payouts_due
from annotation.providers.services.common import action_log
from annotation.providers.services.local_review import clean_note

REFERENCE_MAX = LocalPayout._meta.get_field("reference").max_length


def local_payout_record(batch: Batch, worker: Worker, *, reference: str = "",
                        actor: str = "") -> LocalPayout | None:
    """Record that ``worker`` was paid everything they are owed for ``batch`` now.

    None when nothing is owed (already recorded, e.g. a double click): the worker's row is
    locked while the amount is computed and written, so two admins record one payout."""
    if batch.provider != Worker.Provider.LOCAL:
        raise ValidationError(f"This batch is paid on {batch.get_provider_display()}: approve "
                              "the work there (and send bonuses); nothing to record here.")
    reference = (reference or "").strip()
    if len(reference) > REFERENCE_MAX:
        raise ValidationError(f"The payment reference is {len(reference)} characters; at most "
                              f"{REFERENCE_MAX}.")
    reference = clean_note(reference, what="payment", required=False)
    with transaction.atomic():
        Worker.objects.select_for_update().filter(pk=worker.pk).first()
        due = local_payouts_due(batch, worker=worker)
        amount = due[0].outstanding if due else 0
        if amount <= 0:
            return None
        payout = LocalPayout.objects.create(batch=batch, worker=worker, amount=amount,
                                            reference=reference, actor=str(actor)[:150],
                                            paid_at=timezone.now())
    action_log(batch, Worker.Provider.LOCAL, "payout", worker.external_id, True,
               f"${amount}" + (f" ({reference})" if reference else ""), actor)
    return payout
