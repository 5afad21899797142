"""The ``batch`` argument of the commands that act on one batch (launch, pay, notify): one
lookup, so each command names an unknown batch the same way."""
from django.core.management.base import CommandError

from annotation.models import Batch


def add_batch_argument(parser) -> None:
    parser.add_argument("batch", help="Batch UUID")


def batch_option(options: dict, *, marketplace_only: bool = False) -> Batch:
    """The batch the ``batch`` argument names (with ``marketplace_only``, not a local one)."""
    batches = Batch.objects.exclude(provider="local") if marketplace_only else Batch.objects
    batch = batches.filter(uuid=options["batch"]).first()
    if batch is None:
        kind = "marketplace batch" if marketplace_only else "batch"
        raise CommandError(f"No {kind} {options['batch']}")
    return batch
