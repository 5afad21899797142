"""Direct grading 0–10 (ConvBench): a single-turn response against the reference, or each
judged turn of a conversation then an overall grade carrying the turn evaluations."""
from __future__ import annotations

from django.core.exceptions import ValidationError

from annotation.models import Instance

from ..plans import (
    CAPABILITY,
    ORDINALS,
    Outcome,
    PlanError,
    conversation_for,
    conversation_turns,
    focus,
    image_context,
    image_urls,
    judged_turns,
    mean_score,
    render_conversation,
    sends_images,
    turn_judgments,
)
from . import register
from .shapes import GradeParser, GradingKind, direct_grade


@register
class Direct(GradingKind):
    slug = "direct"
    label = "Direct grading 0–10 (ConvBench)"
    position = 60
    score_range = (0, 10)
    parser = GradeParser(score_range, direct_grade)
    ablation = True
    demo_name = "Stand-in direct-grading judge"

    def candidates(self, study_id: int):
        """Turn 0 (single and multi-image, with a reference) or a conversation's turn 1."""
        return self.graded_responses(study_id).filter(turn__in=[0, 1]).exclude(
            instance__kind=Instance.Kind.SINGLE, instance__reference_output="").exclude(
            instance__kind=Instance.Kind.MULTI, instance__reference_output="")

    def check_item(self, obj, is_conversation: bool) -> None:
        if is_conversation and obj.turn not in (0, 1):
            raise ValidationError(f"response {obj.uuid}: grade a conversation through its "
                                  "turn 1")

    def load_query(self, images):
        return self.item_model().objects.select_related("instance", "model").prefetch_related(
            images, "instance__turns")

    def run_unit(self, judge, response, ordering, caller) -> dict:
        if response.instance.kind == Instance.Kind.CONVERSATION:
            return self._conversation(judge, response, caller)
        return self._single(judge, response, caller)

    def _single(self, judge, response, caller) -> dict:
        instance = response.instance
        if not instance.reference_output:
            raise PlanError(f"instance {instance.uuid} has no reference output")
        template = self.template("direct_grade", judge)
        images = image_urls(instance) if sends_images(judge) else []
        messages = template.render(image_context=image_context(instance),
                                   instruction=instance.instruction,
                                   reference=instance.reference_output, response=response.text)
        outcomes = [caller.call(template, messages, parse=self.parser, turn="", sample=s,
                                images=images) for s in range(judge.k)]
        return {"": mean_score(outcomes)}

    def _conversation(self, judge, response, caller) -> dict:
        instance = response.instance
        side = conversation_for(response)
        turns = conversation_turns(instance)
        conversation = render_conversation(turns, side.turns, "Assistant A")
        reference = render_conversation(turns, {t.turn: t.reference_answer for t in turns},
                                        "the reference").replace(" response from the reference",
                                                                 " high quality reference")
        context = image_context(instance)
        turn_tpl = self.template("direct_turn", judge)
        overall_tpl = self.template("direct_overall", judge)
        wanted = judged_turns(side)
        scores: dict[str, list[Outcome]] = {str(t): [] for t in wanted} | {"overall": []}
        for s in range(judge.k):
            outputs = {}
            for t in wanted:
                focus_item, focus_block = focus(turns[t - 1])
                messages = turn_tpl.render(
                    image_context=context, reference_conversation=reference,
                    conversation=conversation, ordinal=ORDINALS[t], capability=CAPABILITY[t],
                    focus_item=focus_item, focus_block=focus_block)
                outcome = caller.call(turn_tpl, messages, parse=self.parser, turn=str(t),
                                      sample=s)
                scores[str(t)].append(outcome)
                outputs[t] = outcome.raw or "(no evaluation)"
            messages = overall_tpl.render(image_context=context,
                                          reference_conversation=reference,
                                          conversation=conversation,
                                          turn_judgments=turn_judgments(outputs))
            scores["overall"].append(caller.call(overall_tpl, messages, parse=self.parser,
                                                 turn="overall", sample=s))
        return {turn: mean_score(outs) for turn, outs in scores.items()}
