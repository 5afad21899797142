"""The prompt that asks a text-only LLM for a candidate reference (pure, no Django).

Structure follows VisIT-Bench §2.1: the model sees the instruction-conditioned caption standing
in for the image, then the instruction, is asked to answer briefly (a short explanation is
welcome) and is cued to start its answer. The multi-image variant names each image in order so
the instruction's references ("the second picture") can be resolved. Wording is ours.
"""
from __future__ import annotations

from collections.abc import Sequence

PROMPT_VERSION = "visit-reference-v1"


def build_reference_prompt(instruction: str, captions: Sequence[str]) -> str:
    """The user message for one instance; ``captions`` are in image order."""
    if not captions:
        raise ValueError("at least one caption is needed")
    if any(not c.strip() for c in captions):
        raise ValueError("every image needs a caption")
    if len(captions) == 1:
        scene = f"Picture an image that is described as follows: {captions[0].strip()}"
        ask = "Now carry out the instruction below about that image."
    else:
        described = "\n".join(
            f"Image {n}: {caption.strip()}" for n, caption in enumerate(captions, start=1)
        )
        scene = (f"Picture {len(captions)} images, given in this order and described as "
                 f"follows:\n{described}")
        ask = ("Now carry out the instruction below about these images, calling them Image 1, "
               "Image 2 and so on where needed.")
    return (
        f"{scene}\n\n{ask} Keep the answer short; you may add a brief explanation.\n"
        f"Instruction: {instruction.strip()}\nAnswer:"
    )
