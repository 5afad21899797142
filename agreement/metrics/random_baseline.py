"""Random: the chance-level baseline judge, seeded per response."""
from __future__ import annotations

import random as _random
from collections.abc import Sequence

from .registry import Reference, register


@register(name="random", label="Random",
          settings=lambda options: {"seed": int(options.get("seed", 0)),
                                    "distribution": "uniform [0, 1)"},
          seeded_per_item=True)
def random(
    candidates: Sequence[str], references: Sequence[Reference] | None = None, seed: int = 0
) -> list[float]:
    """Uniform [0, 1) scores from a seeded generator: the chance-level judge."""
    rng = _random.Random(seed)
    return [rng.random() for _ in candidates]
