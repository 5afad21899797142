"""A toy judge kind, kept outside the app to show what a new kind is: this one module and its
prompt file (``prompts/toy_brevity.txt``). It grades a single-turn response's brevity 1–3 in
its own answer format ("Brevity: n"); the registry, runs, calls, extraction fallback and
verdict storage come from the judge layer unchanged.

Imported by ``test_toy_kind.py`` inside a fixture that unregisters it afterwards, so other
tests see the shipped kinds only.
"""
import re
from pathlib import Path

from annotation.models import Instance
from judging.judges.kinds import register
from judging.judges.kinds.shapes import GradeParser, GradingKind
from judging.judges.plans import mean_score

_BREVITY = re.compile(r"^\s*Brevity:\s*([0-9]+)\s*$", re.MULTILINE)


def brevity_grade(text: str) -> tuple[str, float] | None:
    """The one "Brevity: n" line of the answer (none, or two: not strict)."""
    found = _BREVITY.findall(text)
    return ("", float(found[0])) if len(found) == 1 else None


@register
class ToyBrevity(GradingKind):
    slug = "toy_brevity"
    label = "Toy: brevity 1–3"
    score_range = (1, 3)
    parser = GradeParser(score_range, brevity_grade, whole=True)
    prompts_dir = Path(__file__).resolve().parent / "prompts"

    def candidates(self, study_id: int):
        return self.graded_responses(study_id).filter(turn=0,
                                                      instance__kind=Instance.Kind.SINGLE)

    def load_query(self, images):
        return self.item_model().objects.select_related("instance").prefetch_related(images)

    def run_unit(self, judge, response, ordering, caller) -> dict:
        template = self.template("toy_brevity", judge)
        messages = template.render(instruction=response.instance.instruction,
                                   response=response.text)
        outcomes = [caller.call(template, messages, parse=self.parser, turn="", sample=s)
                    for s in range(judge.k)]
        return {"": mean_score(outcomes)}
