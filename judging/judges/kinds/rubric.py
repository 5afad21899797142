"""Absolute rubric 1–5 (Prometheus-Vision): a response graded against the instance's score
rubric, the judge's feedback kept with the grade."""
from __future__ import annotations

from annotation.models import ScoreRubric

from ..plans import PlanError, image_context, image_urls, mean_score, sends_images
from . import register
from .shapes import GradeParser, GradingKind, rubric_grade


@register
class Rubric(GradingKind):
    slug = "rubric"
    label = "Absolute rubric 1–5 (Prometheus)"
    position = 50
    score_range = (1, 5)
    parser = GradeParser(score_range, rubric_grade, whole=True)
    demo_name = "Stand-in rubric judge"
    demo_sends_images = True

    def candidates(self, study_id: int):
        return self.graded_responses(study_id).filter(instance__rubrics__isnull=False,
                                                      turn=0).distinct()

    def load_query(self, images):
        return self.item_model().objects.select_related("instance", "model").prefetch_related(
            images, "instance__rubrics")

    def run_unit(self, judge, response, ordering, caller) -> dict:
        instance = response.instance
        rubric: ScoreRubric | None = next(iter(instance.rubrics.all()), None)
        if rubric is None:
            raise PlanError(f"instance {instance.uuid} has no score rubric")
        template = self.template("rubric_absolute", judge)
        images = image_urls(instance) if sends_images(judge) else []
        messages = template.render(
            image_context=image_context(instance), instruction=instance.instruction,
            response=response.text,
            reference=rubric.reference_answer or instance.reference_output or "(none)",
            criteria=rubric.criteria, **{f"score{i}": text for i, text in rubric.levels()})
        outcomes = [caller.call(template, messages, parse=self.parser, turn="", sample=s,
                                images=images) for s in range(judge.k)]
        feedback = next((o.feedback for o in outcomes if o.score is not None), "")
        return {"": mean_score(outcomes), "feedback": feedback}
