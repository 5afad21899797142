"""A new model's submission in Chromium, from the upload form to the leaderboard: the status
page follows the judge run (a real loopback OpenAI-protocol judge) and turns into the finished
page by itself; the model is then on the judge's board, marked as submitted."""
import json
import threading

import pytest
from django.contrib.auth.models import Group
from playwright.sync_api import expect

from judging.models import EvalModel, Response
from tests.judging.judges.conftest import (
    make_instance,
    make_judge,
    reference_model,
    server,  # noqa: F401  (the loopback judge)
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
VERDICT = "Step 1: compared.\nOverall, Response A is better."


@pytest.fixture
def researcher(django_user_model):
    """A submitter who is also an analyst (they read the leaderboards)."""
    user = django_user_model.objects.create_user("rita", password="pw-long-enough-1")
    for role in ("submitter", "analyst"):
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def test_a_submission_walks_from_upload_to_the_leaderboard(page_for, researcher, server,  # noqa: F811
                                                           settings, tmp_path):
    reference, anchor = reference_model(), EvalModel.objects.create(name="Anchor-7B")
    instances = [make_instance() for _ in range(6)]
    for inst in instances:
        Response.objects.create(instance=inst, model=reference, text=inst.reference_output)
        Response.objects.create(instance=inst, model=anchor, text=f"anchor {inst.pk}")
    gate = threading.Event()  # hold the judge until the page has shown its progress bar
    server.responder = lambda body: (gate.wait(30), VERDICT)[1]
    settings.SUBMISSION_JUDGE = make_judge(server, name="walk-judge", concurrency=2).name
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("\n".join(json.dumps({"item_id": str(i.uuid),
                                                 "prediction": f"My answer {i.pk}."})
                                     for i in instances))

    page = page_for(researcher)
    page.goto("/")
    page.get_by_role("link", name="Submit a model").click()
    page.fill("#id_name", "WalkVLM")
    page.set_input_files("#id_file", str(predictions))
    page.get_by_role("button", name="Submit for judging").click()
    page.wait_for_url("**/eval/submit/*/")
    assert page.locator("#status-label").inner_text() == "Being judged"
    assert page.locator("#status-bar").get_attribute("max") == "12"  # 6 × both orderings
    assert "6 answers stored" in page.content()
    gate.set()
    # The page reloads itself when the run finishes (no reload here).
    expect(page.locator("#status-label")).to_have_text("On the leaderboards", timeout=60_000)
    page.get_by_role("link", name="See it on the leaderboard").click()
    row = page.locator("tr", has_text="WalkVLM v1")
    assert row.count() == 1
    assert "submitted, automatic judge" in row.inner_text()
