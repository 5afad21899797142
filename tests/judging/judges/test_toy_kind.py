"""A new judge kind is one module and one prompt file: the toy kind (``toy_kind.py``) is
registered, then run end to end against the loopback OpenAI-protocol server, through the same
services, calls, extraction fallback and verdict storage as the shipped kinds."""
import importlib
import sys

import pytest
from django.core.exceptions import ValidationError

from judging.judges.kinds import all_kinds, get_kind, unregister
from judging.judges.models import Judge, JudgeCall
from judging.judges.services import (
    default_items,
    judge_estimate,
    judge_run_execute,
    judge_run_start,
)
from judging.models import Judgment, Response
from tests.judging.judges.conftest import make_instance, make_judge, make_models
from tests.support.fake_openai import prompt_text

pytestmark = pytest.mark.django_db
TOY_MODULE = "tests.judging.judges.toy_kind"


@pytest.fixture
def toy_kind():
    """Import the toy module (its ``@register`` runs), and take it out again afterwards."""
    importlib.import_module(TOY_MODULE)
    yield get_kind("toy_brevity")
    unregister("toy_brevity")
    sys.modules.pop(TOY_MODULE, None)


def _judge_row(**kw) -> Judge:
    return Judge(name="toy judge", base_url="http://127.0.0.1:9/v1", model_name="m", **kw)


def test_the_kind_field_offers_what_the_registry_holds(toy_kind):
    judge = _judge_row(kind="toy_brevity")
    judge.full_clean()  # the kind is a valid choice while registered
    assert ("toy_brevity", "Toy: brevity 1–3") in Judge._meta.get_field("kind").choices
    assert judge.spec is toy_kind and judge.score_range == (1, 3) and not judge.is_pairwise
    unregister("toy_brevity")
    with pytest.raises(ValidationError) as refused:
        judge.full_clean()
    assert "kind" in refused.value.message_dict
    assert "toy_brevity" not in [k.slug for k in all_kinds()]


def test_a_toy_kind_runs_end_to_end_against_the_loopback_judge(server, toy_kind):
    (model,) = make_models("m1")
    short, rambling, off_scale = (
        Response.objects.create(instance=make_instance(), model=model, text=text)
        for text in ("Red.", "Well, it depends on the light, the angle, the mood...", "Red!"))
    replies = {"Red.": "Short and direct.\nBrevity: 3",
               "Well, it depends": "It rambles on; I would say one.",
               "Red!": "Brevity: 7"}

    def responder(body):
        prompt = prompt_text(body)
        if "extract the final rating" in prompt:
            return "Final Rating: 1" if "rambles" in prompt else "Final Rating: 2"
        return next(reply for start, reply in replies.items() if f"Answer: {start}" in prompt)

    server.responder = responder
    judge = make_judge(server, kind="toy_brevity")
    items = default_items(judge)
    assert set(items) == {short.uuid, rambling.uuid, off_scale.uuid}
    assert judge_estimate(judge=judge, item_uuids=items).calls == 3
    run = judge_run_execute(judge_run_start(judge=judge, item_uuids=items, dispatch=False))

    assert (run.status, run.scope, run.units_done, run.units_failed) == (
        "done", "responses", 3, 0)
    prompt = prompt_text(server.requests[0].body)
    assert "You grade how brief an answer is" in prompt and "Question: What colour" in prompt
    calls = {c.item: (c.template_version, c.parse_path, c.score)
             for c in JudgeCall.objects.filter(purpose="judge")}
    assert calls == {short.uuid: ("toy_brevity@v1", "strict", 3.0),
                     rambling.uuid: ("toy_brevity@v1", "extraction", 1.0),
                     off_scale.uuid: ("toy_brevity@v1", "extraction", 2.0)}
    extractions = [p for p in map(prompt_text, (r.body for r in server.requests))
                   if "extract the final rating" in p]
    assert len(extractions) == 2  # the kind's scale, not the default 0–10
    assert all("a number between 1 and 3" in p for p in extractions)
    stored = dict(Judgment.objects.filter(source=judge.name).values_list("response", "score"))
    assert stored == {short.pk: 3.0, rambling.pk: 1.0, off_scale.pk: 2.0}
