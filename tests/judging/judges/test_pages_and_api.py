"""Run page, API and leaderboard: permissions, progress figures, escaping, judge leaderboard."""
import pytest
from django.urls import reverse

from judging.judges.models import JudgeRun
from judging.judges.services import judge_run_execute, judge_run_start
from judging.leaderboards import leaderboard_build
from tests.judging.judges.conftest import make_comparison, make_judge, make_models

pytestmark = pytest.mark.django_db


def _done_run(server, n=2, reply="<b>x</b>\nOverall, Response A is better."):
    m1, m2 = make_models("m1", "m2")
    comparisons = [make_comparison(m1, m2) for _ in range(n)]
    server.responder = lambda body: reply
    run = judge_run_start(judge=make_judge(server), item_uuids=[c.uuid for c in comparisons],
                          dispatch=False)
    return judge_run_execute(run)


def test_run_page_shows_progress_and_escapes_model_output(server, analyst_client, alice_client):
    run = _done_run(server)
    url = reverse("judging:judges:run_detail", args=[run.uuid])
    assert alice_client.get(url).status_code == 403
    html = analyst_client.get(url).content.decode()
    assert "4 of 4 units done" in html and "4 made" in html
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html
    assert "Cancel</button>" not in html  # analysts read, admins manage
    listing = analyst_client.get(reverse("judging:judges:run_list")).content.decode()
    assert str(run.uuid) in listing


def test_only_admins_cancel_or_resume(server, analyst_client, admin_client_):
    run = _done_run(server)
    url = reverse("judging:judges:run_cancel", args=[run.uuid])
    assert analyst_client.post(url).status_code == 403
    assert admin_client_.post(url).status_code == 302
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.DONE  # a finished run stays finished


def test_api_progress_for_analysts_only(server, analyst_client, alice_client, client):
    run = _done_run(server)
    url = f"/api/judges/runs/{run.uuid}/progress/"
    assert client.get(url).status_code in (401, 403)
    assert alice_client.get(url).status_code == 403
    data = analyst_client.get(url).json()
    assert (data["status"], data["units_done"], data["units_total"], data["calls_made"]) == (
        "done", 4, 4, 4)
    assert float(data["cost"]) > 0 and data["percent"] == 100.0
    assert analyst_client.post(f"/api/judges/runs/{run.uuid}/cancel/").status_code == 403
    listing = analyst_client.get("/api/judges/runs/").json()
    rows = listing["results"] if isinstance(listing, dict) else listing
    assert rows[0]["run"] == str(run.uuid)


def test_judge_verdicts_feed_a_leaderboard_of_their_own(server, analyst_client):
    strong, weak = make_models("strong", "weak")
    comparisons = [make_comparison(strong, weak) for _ in range(3)]
    comparisons += [make_comparison(weak, strong) for _ in range(3)]

    def prefers_strong(body):
        from tests.support.fake_openai import prompt_text
        a = prompt_text(body).split("Response A: ")[-1].split("Response B: ")[0]
        return f"Overall, Response {'A' if 'strong answer' in a else 'B'} is better."

    server.responder = prefers_strong
    judge = make_judge(server, name="gpt-judge")
    judge_run_execute(judge_run_start(judge=judge, item_uuids=[c.uuid for c in comparisons],
                                      dispatch=False))
    comparisons[0].gold_choice = "A"  # gold items measure workers; no leaderboard counts them
    comparisons[0].save(update_fields=["gold_choice"])
    board = leaderboard_build("gpt-judge", bootstrap_rounds=20, min_matches=0).rows
    assert [row["model"] for row in board] == ["strong", "weak"]
    assert board[0]["matches"] == 5 and board[0]["rating"] > board[1]["rating"]
    html = analyst_client.get(reverse("judging:judges:leaderboards")).content.decode()
    assert "gpt-judge" in html and html.index("strong") < html.index("weak")


@pytest.mark.django_db(transaction=True)
def test_resuming_from_the_api_answers_at_once_and_runs_out_of_the_request(server, admin):
    """Without a broker the run works in a thread, not in the admin's request."""
    import threading
    import time

    from rest_framework.test import APIClient

    m1, m2 = make_models("m1", "m2")
    comparisons = [make_comparison(m1, m2) for _ in range(2)]
    gate = threading.Event()
    server.responder = lambda body: (gate.wait(20), "Overall, Response A is better.")[1]
    run = judge_run_start(judge=make_judge(server), item_uuids=[c.uuid for c in comparisons],
                          dispatch=False)
    client = APIClient()
    client.force_authenticate(admin)
    answer = client.post(f"/api/judges/runs/{run.uuid}/resume/")
    assert answer.status_code == 200 and answer.json()["status"] in ("pending", "running")
    gate.set()
    # Wait for the job threads instead of polling the run's row while they write it: on
    # SQLite's shared in-memory test database a read during their write transaction could
    # make their next statement fail ("table is locked"), and then the run never finished.
    deadline = time.monotonic() + 60
    while jobs := [t for t in threading.enumerate() if t.name.startswith("job ")]:
        assert time.monotonic() < deadline, "the run did not finish"
        for thread in jobs:
            thread.join(max(0.0, deadline - time.monotonic()))
    run = JudgeRun.objects.get(pk=run.pk)
    assert (run.status, run.units_done) == (JudgeRun.Status.DONE, 4)
