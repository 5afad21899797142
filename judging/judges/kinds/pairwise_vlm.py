"""Pairwise VLM: the judge sees the images themselves (always sent as image parts)."""
from . import register
from .pairwise import SingleTurnPairwise


@register
class PairwiseVlm(SingleTurnPairwise):
    slug = "pairwise_vlm"
    label = "Pairwise VLM (images sent)"
    position = 30
    prompt = "pairwise_vlm"
    always_sends_images = True
    demo_name = "Stand-in VLM judge"
