"""Multi-turn pairwise (ConvBench): each judged turn of two three-turn conversations, then an
overall verdict whose prompt carries the turn judgments."""
from __future__ import annotations

from django.core.exceptions import ValidationError

from annotation.models import Instance

from ...models import Comparison
from ..plans import (
    ORDINALS,
    conversation_for,
    conversation_turns,
    focus,
    image_context,
    judged_turns,
    majority,
    render_conversation,
    shown,
    turn_judgments,
)
from . import register
from .shapes import PairwiseKind


@register
class MultiTurn(PairwiseKind):
    slug = "multi_turn"
    label = "Multi-turn pairwise (per turn + overall)"
    position = 40
    ablation = True
    demo_name = "Stand-in multi-turn judge"

    def candidates(self, study_id: int):
        return Comparison.objects.filter(instance__study_id=study_id,
                                         instance__kind=Instance.Kind.CONVERSATION)

    def check_item(self, obj, is_conversation: bool) -> None:
        if not is_conversation:
            raise ValidationError(f"comparison {obj.uuid}: a multi-turn judge needs a "
                                  "conversation")

    def load_query(self, images):
        return (Comparison.objects.select_related("instance", "response_a__model",
                                                  "response_b__model")
                .prefetch_related(images, "instance__turns"))

    def run_unit(self, judge, comparison, ordering, caller) -> dict:
        instance = comparison.instance
        first, second = shown(comparison, ordering)
        side_a, side_b = conversation_for(first), conversation_for(second)
        turns = conversation_turns(instance)
        conv_a = render_conversation(turns, side_a.turns, "Assistant A")
        conv_b = render_conversation(turns, side_b.turns, "Assistant B")
        context = image_context(instance)
        turn_tpl = self.template("multiturn_turn", judge)
        overall_tpl = self.template("multiturn_overall", judge)
        wanted = judged_turns(side_a, side_b)
        votes: dict[str, list[str]] = {str(t): [] for t in wanted} | {"overall": []}
        for s in range(judge.k):
            outputs = {}
            for t in wanted:
                focus_item, focus_block = focus(turns[t - 1])
                messages = turn_tpl.render(
                    image_context=context, conversation_a=conv_a, conversation_b=conv_b,
                    ordinal=ORDINALS[t], focus_item=focus_item, focus_block=focus_block)
                outcome = caller.call(turn_tpl, messages, parse=self.parser, turn=str(t),
                                      sample=s)
                votes[str(t)].append(outcome.verdict)
                outputs[t] = outcome.raw or f"(no judgment; verdict {outcome.verdict})"
            messages = overall_tpl.render(image_context=context, conversation_a=conv_a,
                                          conversation_b=conv_b,
                                          turn_judgments=turn_judgments(outputs))
            outcome = caller.call(overall_tpl, messages, parse=self.parser, turn="overall",
                                  sample=s)
            votes["overall"].append(outcome.verdict)
        return {turn: majority(v) for turn, v in votes.items()}
