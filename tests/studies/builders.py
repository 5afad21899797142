"""Builders for study tests: a study with its own models, comparisons and verdicts."""
import itertools

from annotation.models import Instance, InstructionFamily
from judging.models import Comparison, EvalModel, Judgment, Response
from judging.services.judgments.record import judgment_record
from studies.models import Study, study_pk

_ids = itertools.count(1)


def study(slug: str, *, public: bool = False) -> Study:
    return Study.objects.create(name=slug.replace("-", " ").title(), slug=slug,
                                visibility="public" if public else "private")


def models(study, *names, reference=None) -> dict[str, EvalModel]:
    out = {n: EvalModel.objects.create(name=n, study_id=study_pk(study)) for n in names}
    if reference:
        out[reference] = EvalModel.objects.create(name=reference, study_id=study_pk(study),
                                                  is_reference=True)
    return out


def voted(study, spec, *, category="Chart reading", source=Judgment.HUMAN) -> list[Comparison]:
    """One comparison per (model_a, model_b, votes) in ``study``, each vote a verdict of
    ``source`` stored by the one judgment writer."""
    family = InstructionFamily.objects.get_or_create(name=category)[0]
    made = []
    for a, b, votes in spec:
        n = next(_ids)
        inst = Instance.objects.create(study_id=study_pk(study), family=family, instruction=f"Item {n}?",
                                       stage="done", reference_status="verified")
        comparison = Comparison.objects.create(
            instance=inst, response_a=Response.objects.create(instance=inst, model=a, text="a"),
            response_b=Response.objects.create(instance=inst, model=b, text="b"))
        for k, choice in enumerate(votes):
            judgment_record(source=source, annotator=f"w{k}", comparison=comparison,
                            choice=choice)
        made.append(comparison)
    return made


def grades(study, model, scores, *, source=Judgment.HUMAN) -> None:
    inst = Instance.objects.create(study_id=study_pk(study), instruction=f"Grade {next(_ids)}?",
                                   stage="done", reference_status="verified")
    response = Response.objects.create(instance=inst, model=model, text="graded")
    for k, score in enumerate(scores):
        judgment_record(source=source, annotator=f"g{k}", kind=Judgment.Kind.SCORE,
                        response=response, score=score)
