"""Length: the 'longer is better' baseline judge VisIT-Bench reports."""
from __future__ import annotations

from collections.abc import Sequence

from .registry import Reference, register


@register(name="length", label="Length",
          settings=lambda options: {"unit": "non-whitespace tokens", "tokenizer": "str.split()"},
          paper_default={"unit": "non-whitespace tokens"})
def length(candidates: Sequence[str], references: Sequence[Reference] | None = None) -> list[float]:
    """Candidate length in whitespace tokens: the 'longer is better' baseline judge."""
    return [float(len(c.split())) for c in candidates]
