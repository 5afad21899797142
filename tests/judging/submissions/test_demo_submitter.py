"""`make demo` walks the submitter's whole path: sam signs in with the demo password, lands on
the open submission page (the judge scripts/demo.sh names, one of the demo's stand-in judges),
downloads the kit, submits the filled template with no row skipped, and sees the judged
model's row and rank on the board."""
import io
import json
import random
import re
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.core.background import wait_for_jobs
from judging.demo import DEMO_PASSWORD, load_demo
from judging.judges.demo import SUBMISSION_JUDGE, extend_demo
from judging.submissions.models import Submission

pytestmark = [pytest.mark.slow]
DEMO_SH = Path(__file__).resolve().parents[3] / "scripts" / "demo.sh"


def test_demo_script_opens_submissions_against_the_stand_in_judge():
    found = re.search(r'export SUBMISSION_JUDGE="\$\{SUBMISSION_JUDGE:-([^}"]*)\}"',
                      DEMO_SH.read_text())
    assert found and found.group(1) == SUBMISSION_JUDGE


@pytest.mark.django_db(transaction=True)
def test_the_demo_submitter_goes_from_kit_to_board(client, server, settings, monkeypatch):
    monkeypatch.setenv("DEMO_JUDGE_BASE_URL", server.base_url)
    load_demo(seed=3)
    extend_demo(random.Random(1))
    settings.SUBMISSION_JUDGE = SUBMISSION_JUDGE  # as scripts/demo.sh sets it (test above)

    signed_in = client.post(reverse("login"), {"username": "sam", "password": DEMO_PASSWORD})
    assert signed_in.status_code == 302
    landing = client.get("/", follow=True)
    assert landing.request["PATH_INFO"] == "/eval/submit/"
    page = landing.content.decode()
    assert "Submissions are closed" not in page and SUBMISSION_JUDGE in page

    kit_response = client.get("/eval/submit/kit.zip")
    kit = zipfile.ZipFile(io.BytesIO(b"".join(kit_response.streaming_content)))
    template = [json.loads(line) for line in kit.read("predictions_template.jsonl").splitlines()]
    judged = {i["item_id"] for i in map(json.loads, kit.read("items.jsonl").splitlines())
              if i["judged"]}
    assert judged and any(row.get("turn") for row in template)  # conversations' turns too
    filled = "\n".join(json.dumps({**row, "prediction": "A short answer."})
                       for row in template).encode()
    response = client.post("/eval/submit/", {"name": "Sam's VLM", "file": SimpleUploadedFile(
        "predictions_template.jsonl", filled)})
    assert response.status_code == 302, response.content.decode()[:3000]
    sub = Submission.objects.get(submitter__username="sam")
    assert sub.unmatched == [] and sub.responses == len(template)
    assert wait_for_jobs(120)
    sub.refresh_from_db()
    assert sub.status == Submission.Status.DONE, sub.error

    status = client.get(response.url).content.decode()
    link = re.search(r'href="(/eval/submit/board/\?judge=[^"]+)"', status).group(1)
    board = client.get(link.replace("&amp;", "&"))
    assert board.status_code == 200
    assert 'data-model="Sam&#x27;s VLM v1"' in board.content.decode()
