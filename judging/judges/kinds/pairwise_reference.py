"""Pairwise, reference-backed: the two responses judged with the human-verified reference in
the prompt (an instance without one cannot be judged)."""
from . import register
from .pairwise import SingleTurnPairwise


@register
class PairwiseReference(SingleTurnPairwise):
    slug = "pairwise_reference"
    label = "Pairwise, reference-backed (captions)"
    position = 20
    prompt = "pairwise_reference_backed"
    needs_reference = True
    demo_name = "Stand-in reference-backed judge"
