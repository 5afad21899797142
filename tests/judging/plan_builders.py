"""A study with votes and a judge to plan from (the vote planner's tests and browser walk)."""
import random

from annotation.models import Instance, InstructionFamily
from judging.models import Comparison, Judgment, Response
from judging.services.judgments.record import judgment_record
from tests.db_stats import analyze
from tests.studies import builders as sb

STRENGTH = {"alpha": 0.9, "beta": 0.3, "gamma": -0.3, "delta": -0.9}


def voted_study(slug="planned", judge_noise=0.1, voted=24, instances=60, seed=1):
    """A study whose 4 models answered ``instances`` items; ``voted`` comparisons carry 3
    human votes (BT-random) and a judge verdict that copies the majority but for
    ``judge_noise`` of them."""
    rnd = random.Random(seed)
    study = sb.study(slug)
    ms = sb.models(study, *STRENGTH)
    family = InstructionFamily.objects.get_or_create(name="Chart reading")[0]
    names = list(STRENGTH)
    for k in range(instances):
        inst = Instance.objects.create(study=study, family=family, instruction=f"Item {k}?",
                                       stage="done", reference_status="verified")
        responses = {n: Response.objects.create(instance=inst, model=ms[n], text=f"{n} {k}")
                     for n in names}
        if k >= voted:
            continue
        a, b = rnd.sample(names, 2)
        comparison = Comparison.objects.create(instance=inst, response_a=responses[a],
                                               response_b=responses[b])
        p = 1 / (1 + 2.718281828 ** (STRENGTH[b] - STRENGTH[a]))
        votes = ["A" if rnd.random() < p else "B" for _ in range(3)]
        for w, choice in enumerate(votes):
            judgment_record(source=Judgment.HUMAN, annotator=f"w{w}", comparison=comparison,
                            choice=choice)
        majority = max(set(votes), key=votes.count)
        if rnd.random() < judge_noise:
            majority = {"A": "B", "B": "A"}[majority]
        judgment_record(source="gpt-judge", annotator="gpt-judge", comparison=comparison,
                        choice=majority)
    analyze()
    return study
