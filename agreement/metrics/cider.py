"""CIDEr-D: pycocoevalcap's, vectorised (``agreement.cider``); corpus-level, since the n-gram
IDF is over the scored set's references."""
from __future__ import annotations

import re
from collections.abc import Sequence

from . import _common
from .registry import Reference, register

CIDER_N, CIDER_SIGMA = 4, 6.0  # pycocoevalcap's CIDEr-D: n-grams 1..4, length penalty sigma 6
_CIDER_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)?")


def cider_tokenize(text: str) -> str:
    """Lower-case words without punctuation, like the COCO PTB tokenizer (which needs Java)."""
    return " ".join(_CIDER_TOKEN.findall(text.lower()))


def _settings(options: dict) -> dict:
    return {"variant": "CIDEr-D", "n": CIDER_N, "sigma": CIDER_SIGMA,
            "idf": "document frequency over the references of the scored set",
            "tokenizer": "lower-case words, punctuation dropped (PTB-like, no Java)",
            "implementation": "vectorised pycocoevalcap CiderScorer (tested equal)",
            "scale": "0-10",
            "packages": _common.package_versions("pycocoevalcap", "numpy", "scipy")}


@register(name="cider_d", label="CIDEr-D", settings=_settings, corpus=True)
def cider_d(
    candidates: Sequence[str], references: Sequence[Reference], stock: bool = False
) -> list[float]:
    """pycocoevalcap CIDEr-D (0-10 scale) for each pair.

    The n-gram IDF is computed over the references of *this* batch, so score a whole
    evaluation set in one call: the same pair scores differently in another set, and a
    batch of a single pair scores 0 (every n-gram has IDF log(1/1) = 0).
    ``stock=True`` runs pycocoevalcap's own (slower) ``Cider.compute_score``.
    """
    _common.check(candidates, references)
    if not candidates:
        return []
    tokenized: dict[str, str] = {}  # a reference shared by many items is tokenized (and kept) once
    lists: dict[int, list[str]] = {}  # so is a list of them shared by many items (one each)

    def tokenized_list(ref) -> list[str]:
        return [tokenized[r] if r in tokenized else tokenized.setdefault(r, cider_tokenize(r))
                for r in _common.ref_list(ref)]

    refs = [lists[id(ref)] if id(ref) in lists else lists.setdefault(id(ref), tokenized_list(ref))
            for ref in references]
    del lists
    # Kept over pycocoevalcap: 7-9x faster on 1,000 pairs (bench/library_first.py); tested equal.
    if stock:
        from pycocoevalcap.cider.cider import Cider

        _, scores = Cider().compute_score(
            dict(enumerate(refs)), {i: [cider_tokenize(c)] for i, c in enumerate(candidates)}
        )
        return [float(x) for x in scores]
    from agreement.cider import cider_d_scores  # NumPy/SciPy: imported where it scores

    return cider_d_scores(candidates, refs, n=CIDER_N, sigma=CIDER_SIGMA, tokenize=cider_tokenize)
