"""What every importer returns or raises."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError


class ImportFailed(ValidationError):
    """A file that cannot be imported; the message names the row and nothing was written."""


@dataclass
class ImportSummary:
    created: int = 0
    skipped: int = 0  # already imported (same external id): re-importing is safe
    details: dict = field(default_factory=dict)

    def __str__(self) -> str:
        extra = "".join(f", {k}: {v}" for k, v in self.details.items())
        return f"{self.created} created, {self.skipped} already present{extra}"


def content_id(prefix: str, *parts: str) -> str:
    """A stable external id for sources without one (so re-imports are recognised)."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:24]
    return f"{prefix}:{digest}"
