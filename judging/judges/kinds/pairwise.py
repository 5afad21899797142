"""Pairwise, reference-free: which of two responses is better, from the image captions
(VisIT-Bench's GPT-4 judge). The base of the single-turn pairwise kinds."""
from __future__ import annotations

from typing import ClassVar

from django.core.exceptions import ValidationError

from annotation.models import Instance

from ...models import Comparison
from ..plans import PlanError, image_context, image_urls, majority, sends_images, shown
from . import register
from .shapes import PairwiseKind


class SingleTurnPairwise(PairwiseKind):
    """One prompt per ordering over a single- or multi-image instance (no conversations)."""

    prompt: ClassVar[str]  # the prompt file
    needs_reference: ClassVar[bool] = False
    judges_submissions = True

    def candidates(self, study_id: int):
        return Comparison.objects.filter(instance__study_id=study_id).exclude(
            instance__kind=Instance.Kind.CONVERSATION)

    def check_item(self, obj, is_conversation: bool) -> None:
        if is_conversation:
            raise ValidationError(f"comparison {obj.uuid} is a conversation: use a multi-turn "
                                  "judge")

    def load_query(self, images):
        return (Comparison.objects.select_related("instance", "response_a", "response_b")
                .prefetch_related(images))

    def run_unit(self, judge, comparison, ordering, caller) -> dict:
        instance = comparison.instance
        first, second = shown(comparison, ordering)
        template = self.template(self.prompt, judge)
        images = image_urls(instance) if sends_images(judge) else []
        values = {"instruction": instance.instruction, "response_a": first.text,
                  "response_b": second.text, "image_context": image_context(instance),
                  "reference": instance.reference_output or "(no reference)",
                  "image_count": len(images)}
        if self.needs_reference and not instance.reference_output:
            raise PlanError(f"instance {instance.uuid} has no reference output")
        messages = template.render(**values)
        outcomes = [caller.call(template, messages, parse=self.parser, turn="", sample=s,
                                images=images) for s in range(judge.k)]
        return {"": majority([o.verdict for o in outcomes])}


@register
class Pairwise(SingleTurnPairwise):
    slug = "pairwise"
    label = "Pairwise, reference-free (captions)"
    position = 10
    prompt = "pairwise_reference_free"
    demo_name = "Stand-in pairwise judge"
