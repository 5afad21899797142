"""What the demo asks about its pictures and the answers it gives, written from the facts the
picture generator (``annotation.pipeline.demo_images``) drew.

Blind by construction: no answer mentions who wrote it or grades itself; the human reference
and a model's full answer are different phrasings of the same true content. Answers differ only
in what they say: ``quality`` 2 = true and complete, 1 = true but leaves something out,
0 = plausibly wrong (off-by-one count, the runner-up bar, a colour that is not drawn). ``note``
is what a careful rater would write about the answer (always true); it becomes rubric feedback.
Pure Python: no Django.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from annotation.pipeline.demo_images import (
    COLOURS,
    SHAPES,
    WORDS,
    colour_counts,
    n_of,
    position,
    shape_counts,
)


@dataclass(frozen=True)
class Answer:
    text: str
    quality: int
    note: str


@dataclass(frozen=True)
class Question:
    """One instruction about one picture: true phrasings (the first is the reference's),
    a thinner true answer, and plausible wrong ones with the note saying what is wrong."""

    instruction: str
    criteria: str
    full: tuple[str, ...]
    short: str
    short_note: str
    wrong: tuple[tuple[str, str], ...]
    focus_points: tuple[str, ...] = ()

    def reference(self) -> str:
        return self.full[0]

    def answer(self, rnd: random.Random, *, error_rate: float, detail_rate: float) -> Answer:
        """A model's answer: wrong with ``error_rate``, else complete with ``detail_rate``."""
        if rnd.random() < error_rate:
            text, note = rnd.choice(self.wrong)
            return Answer(text, 0, note)
        if rnd.random() < detail_rate:
            return Answer(rnd.choice(self.full[1:]), 2,
                          "Right, and it covers everything the instruction asks for.")
        return Answer(self.short, 1, self.short_note)


def joined(parts: list[str]) -> str:
    if not parts:
        return ""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _by_count(counts: dict[str, int]) -> list[tuple[str, int]]:
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def _unused(facts: dict) -> str:
    return sorted(set(COLOURS) - set(colour_counts(facts)))[0]


# ------------------------------------------------------------------ shapes


def shapes_count(facts: dict) -> Question:
    counts = shape_counts(facts)
    shape = max(SHAPES, key=lambda s: (counts.get(s, 0), -SHAPES.index(s)))
    n = counts[shape]
    mine = _by_count(colour_counts({"shapes": [s for s in facts["shapes"]
                                               if s["shape"] == shape]}))
    colours = joined([f"{WORDS[k]} {c}" for c, k in mine]) if len(mine) > 1 else \
        f"{'all ' if n > 1 else ''}{mine[0][0]}"
    others = joined([n_of(k, s) for s, k in _by_count(counts) if s != shape])
    unused = _unused(facts)
    recoloured = colours.replace(mine[0][0], unused, 1)
    return Question(
        instruction=f"How many {shape}s are in the picture, and what colour is each one?",
        criteria=f"Does the response give the number of {shape}s and their colours as drawn?",
        full=(f"There {'is' if n == 1 else 'are'} {n_of(n, shape)}: {colours}."
              + (f" Besides them the picture has {others}." if others else ""),
              f"I count {n_of(n, shape)} — {colours}."
              + (f" The other shapes are {others}." if others else " There are no others."),
              f"{_cap(n_of(n, shape))}, coloured {colours}."),
        short=f"{_cap(n_of(n, shape))}.",
        short_note=f"The count is right but it does not say the colours ({colours}).",
        wrong=((f"There are {n_of(n + 1, shape)}, mostly {mine[0][0]}.",
                f"Wrong count: there {'is' if n == 1 else 'are'} {n_of(n, shape)}, not "
                f"{WORDS[n + 1]}."),
               (f"There {'is' if n == 1 else 'are'} {n_of(n, shape)}: {recoloured}.",
                f"The count is right, but no shape is {unused}; the {shape}s are {colours}.")),
    )


def shapes_colours(facts: dict) -> Question:
    counts = _by_count(colour_counts(facts))
    total = sum(k for _, k in counts)
    listed_parts = [f"{c} ({n_of(k, 'shape')})" for c, k in counts]
    listed = joined(listed_parts)
    unused = _unused(facts)
    swapped = [(c, counts[1][1] if i == 0 else counts[0][1] if i == 1 else k)
               for i, (c, k) in enumerate(counts)]
    miscounted = joined([f"{c} ({n_of(k, 'shape')})" for c, k in swapped])
    return Question(
        instruction="Which colours are used in the picture, and how many shapes have each "
                    "colour?",
        criteria="Does the response name exactly the colours drawn, with the right count for "
                 "each?",
        full=(f"The picture uses {WORDS[len(counts)]} colours: {listed}.",
              f"There are {joined([n_of(k, c + ' shape') for c, k in counts])}, "
              f"{n_of(total, 'shape')} in all.",
              f"{_cap(listed)} — {WORDS[total]} shapes altogether."),
        short=_cap(joined([c for c, _ in counts])) + ".",
        short_note="The colours are right but it does not say how many shapes have each.",
        wrong=((f"The picture uses {WORDS[len(counts) + 1]} colours: "
                f"{joined([*listed_parts, f'{unused} (one shape)'])}.",
                f"There is no {unused} shape; the colours are {listed}."),
               (f"The picture uses {WORDS[len(counts)]} colours: {miscounted}.",
                f"The counts of {counts[0][0]} and {counts[1][0]} are swapped: {listed}.")),
    )


def shapes_most(facts: dict) -> Question:
    counts = _by_count(colour_counts(facts))
    (top, n), (second, m) = counts[0], counts[1]
    return Question(
        instruction="Which colour appears most often, and on how many shapes?",
        criteria="Does the response name the most frequent colour and its count?",
        full=(f"{_cap(top)} appears most often, on {n_of(n, 'shape')}; next comes {second} "
              f"with {WORDS[m]}.",
              f"{_cap(top)}: {WORDS[n]} of the shapes are {top}, more than the {WORDS[m]} "
              f"{second} one{'' if m == 1 else 's'}.",
              f"The most common colour is {top} ({n_of(n, 'shape')})."),
        short=f"{_cap(top)}.",
        short_note=f"The colour is right but it does not say on how many shapes ({n}).",
        wrong=((f"{_cap(second)} appears most often, on {n_of(m, 'shape')}.",
                f"Wrong colour: {top} is on {n_of(n, 'shape')}, {second} only on {WORDS[m]}."),
               (f"{_cap(top)} appears most often, on {n_of(n + 1, 'shape')}.",
                f"Right colour, wrong count: {WORDS[n]} {top} shapes, not {WORDS[n + 1]}.")),
    )


def shapes_conversation(facts: dict) -> list[Question]:
    """Perception → reasoning → creation about one shapes picture (ConvBench's three turns)."""
    counts = _by_count(colour_counts(facts))
    total = sum(k for _, k in counts)
    (top, n) = counts[0]
    colours = [c for c, _ in counts]
    unused = _unused(facts)
    left = total - n
    return [
        shapes_colours(facts),
        Question(
            instruction=f"If every {top} shape were taken away, how many shapes would be left?",
            criteria="Does the response subtract the right number from the right total?",
            full=(f"{_cap(n_of(left, 'shape'))}: there are {WORDS[total]} in all and "
                  f"{WORDS[n]} of them are {top}.",
                  f"Taking away the {WORDS[n]} {top} shapes from {WORDS[total]} leaves "
                  f"{WORDS[left]}.",
                  f"{WORDS[total]} minus {WORDS[n]} {top} ones leaves {n_of(left, 'shape')}."),
            short=f"{_cap(WORDS[left])}.",
            short_note="The number is right but it does not show how it was found.",
            wrong=((f"{_cap(n_of(left + 1, 'shape'))} would be left.",
                    f"Off by one: {WORDS[total]} minus {WORDS[n]} is {WORDS[left]}."),)),
        Question(
            instruction="Write a four-line poem about the picture that names each of its "
                        "colours.",
            criteria="Is it a four-line poem that names every colour drawn and no other?",
            full=(f"{_cap(WORDS[total])} shapes on a pale page,\n{_cap(joined(colours))} side "
                  f"by side,\n{top} the most, {WORDS[n]} times over,\nand not one shape "
                  "touching another.",
                  f"On a quiet page {WORDS[total]} shapes wait,\n{joined(colours)} in a loose "
                  f"grid,\nthe {top} ones count to {WORDS[n]},\neach standing in its own "
                  "square of light."),
            short=f"{_cap(joined(colours))},\nshapes on a page.",
            short_note="It names the colours but is two lines, not four.",
            wrong=((f"{_cap(WORDS[total])} shapes on a pale page,\n{_cap(joined(colours))} and "
                    f"{unused} side by side,\n{top} the most, {WORDS[n]} times over,\nand not "
                    "one shape touching another.",
                    f"It names {unused}, which is not in the picture."),),
            focus_points=("Does the poem name every colour in the picture?",
                          "Does it avoid colours that are not there?")),
    ]


# ------------------------------------------------------------------ bar charts


def _bars(facts: dict) -> list[tuple[str, int]]:
    return sorted(zip(facts["labels"], facts["values"], strict=True), key=lambda lv: lv[1])


def bars_tallest(facts: dict) -> Question:
    ordered = _bars(facts)
    (label, v), (label2, v2) = ordered[-1], ordered[-2]
    return Question(
        instruction="Which bar is the tallest, and what value does it show?",
        criteria="Does the response name the tallest bar and read its value right?",
        full=(f"The tallest bar is {label} at {v}; the next is {label2} at {v2}.",
              f"{_cap(label)} has the tallest bar, showing {v} — {v - v2} more than {label2} "
              f"({v2}).",
              f"{_cap(label)}, with a value of {v}."),
        short=f"{_cap(label)}.",
        short_note=f"The bar is right but it does not give the value ({v}).",
        wrong=((f"The tallest bar is {label2} at {v2}.",
                f"Wrong bar: {label} is the tallest at {v}; {label2} is second."),
               (f"The tallest bar is {label} at {v + 1}.",
                f"Right bar, misread value: {label} shows {v}.")))


def bars_range(facts: dict) -> Question:
    ordered = _bars(facts)
    (low, lv), (low2, lv2), (high, hv) = ordered[0], ordered[1], ordered[-1]
    return Question(
        instruction="What is the difference between the highest and the lowest value in the "
                    "chart?",
        criteria="Does the response find the highest and lowest values and subtract them?",
        full=(f"The highest value is {hv} ({high}) and the lowest is {lv} ({low}), so the "
              f"difference is {hv - lv}.",
              f"{hv} for {high} minus {lv} for {low}: a difference of {hv - lv}.",
              f"{hv - lv}, from {high} ({hv}) down to {low} ({lv})."),
        short=f"{hv - lv}.",
        short_note="The difference is right but it does not say which bars it comes from.",
        wrong=((f"The highest value is {hv} ({high}) and the lowest is {lv2} ({low2}), so the "
                f"difference is {hv - lv2}.",
                f"It takes {low2} ({lv2}) for the lowest; {low} is lower at {lv}, so the "
                f"difference is {hv - lv}."),))


def bars_order(facts: dict) -> Question:
    ordered = _bars(facts)
    swapped = list(ordered)
    swapped[1], swapped[2] = swapped[2], swapped[1]
    return Question(
        instruction="List the bars from the smallest value to the largest.",
        criteria="Does the response list every bar in increasing order, with values?",
        full=(_cap(", ".join(f"{label} ({v})" for label, v in ordered)) + ".",
              "From smallest to largest: " + ", ".join(f"{label} ({v})"
                                                        for label, v in ordered) + ".",
              _cap(" < ".join(f"{label} {v}" for label, v in ordered))),
        short=_cap(", ".join(label for label, _ in ordered)) + ".",
        short_note="The order is right but it leaves out the values.",
        wrong=((_cap(", ".join(f"{label} ({v})" for label, v in swapped)) + ".",
                f"Out of order: {ordered[1][0]} ({ordered[1][1]}) comes before "
                f"{ordered[2][0]} ({ordered[2][1]})."),))


def bars_conversation(facts: dict) -> list[Question]:
    ordered = _bars(facts)
    (low, lv), (high, hv) = ordered[0], ordered[-1]
    labels = facts["labels"]
    count = len(labels)
    return [
        Question(
            instruction="How many bars does the chart have, and what are their labels?",
            criteria="Does the response give the number of bars and every label?",
            full=(f"{_cap(n_of(count, 'bar'))}: {joined(labels)}, from left to right.",
                  f"The chart has {n_of(count, 'bar')}, labelled {joined(labels)}."),
            short=f"{_cap(WORDS[count])}.",
            short_note="The number is right but it leaves out the labels.",
            wrong=((f"{_cap(n_of(count - 1, 'bar'))}: {joined(labels[:-1])}.",
                    f"It misses {labels[-1]}: there are {WORDS[count]} bars."),)),
        Question(
            instruction="By how much would the shortest bar have to grow to match the tallest?",
            criteria="Does the response pick the right two bars and subtract?",
            full=(f"By {hv - lv}: {low} is at {lv} and {high} at {hv}.",
                  f"{_cap(low)} ({lv}) would need {hv - lv} more to reach {high} ({hv})."),
            short=f"{hv - lv}.",
            short_note="Right, but it does not say which bars.",
            wrong=((f"By {hv - ordered[1][1]}: {ordered[1][0]} is at {ordered[1][1]} and "
                    f"{high} at {hv}.",
                    f"{low} ({lv}) is the shortest, not {ordered[1][0]}."),)),
        Question(
            instruction="Write a one-sentence newspaper caption for the chart.",
            criteria="Is the caption one sentence, true to the chart, for a general reader?",
            full=(f"{_cap(high)} lead the count at {hv}, while {low} trail at {lv}.",
                  f"{_cap(high)} top the chart with {hv}; {low} come last with just {lv}."),
            short=f"{_cap(high)} on top.",
            short_note="True, but hardly a caption: no numbers, no contrast.",
            wrong=((f"{_cap(low)} lead the count at {hv}, while {high} trail at {lv}.",
                    f"It swaps the bars: {high} lead at {hv}, {low} trail at {lv}."),),
            focus_points=("Is the caption factual?", "Is it written for a general reader?")),
    ]


# ------------------------------------------------------------------ the house scene


def scene_trees(facts: dict) -> Question:
    n, side = facts["trees"], facts["sun"]
    other = "right" if side == "left" else "left"
    return Question(
        instruction="How many trees are in the picture, and on which side of the house are "
                    "they?",
        criteria="Does the response count the trees and place them right?",
        full=(f"There {'is' if n == 1 else 'are'} {n_of(n, 'tree')}, all to the {side} of "
              "the house.",
              f"{_cap(n_of(n, 'tree'))} stand{'s' if n == 1 else ''} on the {side} side of the "
              "picture, with the house on the other side.",
              f"{_cap(n_of(n, 'tree'))}, on the {side}."),
        short=f"{_cap(WORDS[n])}.",
        short_note=f"The count is right but it does not say where (to the {side}).",
        wrong=((f"There are {n_of(n + 1, 'tree')}, to the {side} of the house.",
                f"Wrong count: {WORDS[n]}, not {WORDS[n + 1]}."),
               (f"There {'is' if n == 1 else 'are'} {n_of(n, 'tree')}, to the {other} of the "
                "house.", f"Right count, wrong side: the trees are to the {side}.")))


def scene_colours(facts: dict) -> Question:
    wall, door, roof = facts["wall"], facts["door"], facts["roof"]
    return Question(
        instruction="What colour is the house, and what colour is its door?",
        criteria="Does the response give the wall and door colours as drawn?",
        full=(f"The house is {wall} with a {door} door and a {roof} roof.",
              f"{_cap(wall)} walls, a {door} door, and a {roof} roof on top.",
              f"The walls are {wall}; the door is {door}."),
        short=f"{_cap(wall)}.",
        short_note=f"The house colour is right but it does not give the door ({door}).",
        wrong=((f"The house is {door} with a {wall} door.",
                f"Wall and door swapped: the house is {wall}, the door {door}."),))


def scene_sun(facts: dict) -> Question:
    side, n = facts["sun"], facts["trees"]
    other = "right" if side == "left" else "left"
    return Question(
        instruction="Where is the sun, and what is below it?",
        criteria="Does the response place the sun and say what is under it?",
        full=(f"The sun is in the top {side} corner, above the {'tree' if n == 1 else 'trees'}.",
              f"Top {side}; the {n_of(n, 'tree')} stand{'s' if n == 1 else ''} below it.",
              f"In the upper {side} corner, over the {'tree' if n == 1 else 'trees'}."),
        short=f"Top {side}.",
        short_note="The corner is right but it does not say what is below the sun.",
        wrong=((f"The sun is in the top {other} corner, above the house.",
                f"Wrong corner: the sun is top {side}, above the trees, not over the house."),))


def scene_conversation(facts: dict) -> list[Question]:
    wall, door, roof, n = facts["wall"], facts["door"], facts["roof"], facts["trees"]
    more = 5 - n
    return [
        scene_colours(facts),
        Question(
            instruction="How many more trees would be needed for there to be five?",
            criteria="Does the response count the trees and subtract from five?",
            full=(f"{_cap(WORDS[more])}: there {'is' if n == 1 else 'are'} {n_of(n, 'tree')} "
                  "now.",
                  f"With {n_of(n, 'tree')} in the picture, {WORDS[more]} more would make "
                  "five."),
            short=f"{_cap(WORDS[more])}.",
            short_note="Right, but it does not say how many trees there are now.",
            wrong=((f"{_cap(WORDS[more - 1])}: there are {n_of(n + 1, 'tree')} now.",
                    f"It counts {WORDS[n + 1]} trees; there {'is' if n == 1 else 'are'} "
                    f"{WORDS[n]}, so {WORDS[more]} more are needed."),)),
        Question(
            instruction="Write the first two sentences of a children's story set in this "
                        "picture.",
            criteria="Two sentences, for children, true to the picture (house, door, trees)?",
            full=(f"Behind the {door} door of the little {wall} house lived a mouse who loved "
                  f"the sun. Every morning she counted the {n_of(n, 'tree')} in the garden, "
                  "just to be sure.",
                  f"The {wall} house with the {roof} roof was very quiet that morning. Only "
                  f"the {n_of(n, 'tree')} nearby whispered that someone was behind the {door} "
                  "door."),
            short=f"Once there was a {wall} house.",
            short_note="True to the picture but only one short sentence.",
            wrong=((f"Behind the {wall} door of the little {door} house lived a mouse who "
                    f"loved the sun. Every morning she counted the {n_of(n + 1, 'tree')} in "
                    "the garden.",
                    f"The colours are swapped and it counts {WORDS[n + 1]} trees."),),
            focus_points=("Does the story fit the picture (house, door, trees)?",
                          "Is it written for children?")),
    ]


# ------------------------------------------------------------------ spot the difference


def spot_difference(facts_before: dict, facts_after: dict) -> Question:
    change = facts_after["change"]
    item = facts_before["shapes"][change["index"]]
    other = facts_before["shapes"][(change["index"] + 1) % len(facts_before["shapes"])]
    where, shape, old, new = position(item), item["shape"], change["from"], change["to"]
    return Question(
        instruction="What changed between the first and the second picture?",
        criteria="Does the response find the one shape that changed, and both colours?",
        full=(f"The {shape} in {where}, changed from {old} to {new}; everything else is the "
              "same.",
              f"One shape was recoloured: the {old} {shape} in {where}, is {new} in the second "
              "picture.",
              f"In the second picture the {shape} in {where}, is {new} instead of {old}."),
        short=f"A {shape} changed colour.",
        short_note=f"Right shape, but it does not say where or that it went {old} → {new}.",
        wrong=((f"The {other['shape']} in {position(other)}, changed from {other['colour']} "
                f"to {new}.",
                f"Wrong shape: it is the {shape} in {where}, that went from {old} to {new}."),))
