"""BLEU-4: sacrebleu's sentence BLEU."""
from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from . import _common
from .registry import Reference, register


@cache
def _bleu_scorer():
    from sacrebleu.metrics import BLEU

    # Sentence-level BLEU is 0 for short texts without effective order.
    return BLEU(effective_order=True)


def _settings(options: dict) -> dict:
    bleu = _bleu_scorer()
    return {"max_ngram_order": bleu.max_ngram_order, "level": "sentence",
            "smooth_method": bleu.smooth_method, "smooth_value": bleu.smooth_value,
            "effective_order": True, "tokenizer": bleu.tokenizer.signature(),
            "lowercase": bleu.lowercase, "scale": "0-100",
            "multi_reference": "sacrebleu multi-reference",
            "packages": _common.package_versions("sacrebleu")}


@register(name="bleu4", label="BLEU-4", settings=_settings,
          paper_default={"max_ngram_order": 4})
def bleu4(candidates: Sequence[str], references: Sequence[Reference]) -> list[float]:
    """sacrebleu sentence BLEU-4 (13a tokenizer, effective order), on sacrebleu's 0-100 scale."""
    _common.check(candidates, references)
    scorer = _bleu_scorer()
    return [
        scorer.sentence_score(c, _common.ref_list(r)).score
        for c, r in zip(candidates, references, strict=True)
    ]
