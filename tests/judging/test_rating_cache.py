"""The rating cache: a leaderboard is computed once for the page, its plots, the downloads, the
API and the command, until a judgment is added, imported, deleted or edited; concurrent first
views compute it once; cached values equal freshly computed ones."""
import csv
import io
import json
import threading
import time
from datetime import UTC, datetime, timedelta
from unittest import mock

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.engine.services.workers import worker_block
from judging import rating_cache
from judging.leaderboards import leaderboard_build, score_leaderboard_build
from judging.models import Comparison, Judgment
from judging.services.judgments.imports import judgments_import
from judging.services.judgments.record import judgment_record
from judging.views import plots
from tests.factories import make_workers
from tests.judging import builders

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _empty_cache():
    cache.clear()  # the local-memory cache outlives a test's database
    yield
    cache.clear()


def _study(votes=("A", "A", "B", "tie", "A", "B"), *, source=Judgment.HUMAN, workers=None):
    """Three models, one comparison per pair, ``votes`` on each; returns the comparisons."""
    ms = builders.models("llava", "blip", reference="reference")
    comparisons = []
    for a, b in (("reference", "llava"), ("llava", "blip"), ("blip", "reference")):
        inst = builders.instance()
        comparisons.append(Comparison.objects.create(
            instance=inst, response_a=builders.respond(inst, ms[a]),
            response_b=builders.respond(inst, ms[b])))
    for n, (comparison, choice) in enumerate(
            (c, v) for c in comparisons for v in votes):
        worker = workers[n % len(workers)] if workers else None
        judgment_record(source=source, annotator=f"w{n % 3}", comparison=comparison,
                        choice=choice, worker=worker, created_at=T0 + timedelta(minutes=n))
    return comparisons


def _later(monkeypatch, seconds=2 * rating_cache.RECHECK_SECONDS + 1):
    """Move the clock on (the local-memory cache expires entries by it too)."""
    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now + seconds)


def _vote(comparison, choice="B", *, source=Judgment.HUMAN, minutes=0):
    return judgment_record(source=source, annotator="late", comparison=comparison, choice=choice,
                           created_at=T0 + timedelta(minutes=minutes))


def test_second_view_computes_nothing_and_every_reader_shares_one_computation(
        analyst_client, bt_calls):
    _study()
    page = analyst_client.get(reverse("judging:leaderboard"))
    assert page.status_code == 200 and bt_calls.call_count == 1
    with mock.patch.object(plots, "ratings_png", wraps=plots.ratings_png) as drawn, \
            mock.patch.object(plots, "category_png", wraps=plots.category_png) as drawn_cat:
        pngs = [analyst_client.get(reverse(name)).content
                for name in ("judging:leaderboard_ratings_png", "judging:leaderboard_ratings_png",
                             "judging:leaderboard_categories_png",
                             "judging:leaderboard_categories_png")]
        assert drawn.call_count == 1 and drawn_cat.call_count == 1  # PNG bytes cached too
    assert pngs[0] == pngs[1] and pngs[0].startswith(b"\x89PNG")
    csv_text = analyst_client.get(reverse("judging:leaderboard_download", args=["csv"]))
    json_board = analyst_client.get(reverse("judging:leaderboard_download", args=["json"])).json()
    api = analyst_client.get("/api/eval/leaderboard/").json()
    out = io.StringIO()
    call_command("ratings", "--format", "json", stdout=out)
    again = analyst_client.get(reverse("judging:leaderboard"))
    assert bt_calls.call_count == 1  # page, plot, CSV, JSON, API, command and page again
    assert api == json_board == json.loads(out.getvalue()) == page.context["board"].as_dict()
    assert again.context["board"].as_dict() == json_board
    assert csv_text.content.decode().splitlines()[0].startswith("rank,model,rating")
    assert len(json_board["rows"]) == 3 and json_board["judgments"] == 18


def test_a_cached_page_reads_judgments_only_for_its_two_stamps(analyst_client):
    _study()
    analyst_client.get(reverse("judging:leaderboard"))
    with CaptureQueriesContext(connection) as queries:
        assert analyst_client.get(reverse("judging:leaderboard")).status_code == 200
    on_judgments = [q["sql"] for q in queries if "judging_judgment" in q["sql"]]
    assert len(on_judgments) == 2, on_judgments  # this source's and every source's newest


def test_cached_values_equal_uncached(analyst_client):
    _study()
    cached = rating_cache.leaderboard("human", bootstrap_rounds=300, seed=4)
    assert rating_cache.leaderboard("human", bootstrap_rounds=300, seed=4) is not None
    assert cached.as_dict() == leaderboard_build("human", bootstrap_rounds=300,
                                                 seed=4).as_dict()
    assert (rating_cache.score_leaderboard("human", bootstrap_rounds=50).as_dict()
            == score_leaderboard_build("human", bootstrap_rounds=50).as_dict())
    other_seed = rating_cache.leaderboard("human", bootstrap_rounds=300, seed=5)
    assert other_seed.as_dict() == leaderboard_build("human", bootstrap_rounds=300,
                                                     seed=5).as_dict()


def test_a_new_judgment_recomputes_only_its_own_source(analyst_client, bt_calls):
    comparisons = _study()
    _study(("A", "B"), source="gpt-judge")
    analyst_client.get(reverse("judging:leaderboard"))
    analyst_client.get(reverse("judging:leaderboard"), {"judge": "gpt-judge"})
    assert bt_calls.call_count == 2
    _vote(comparisons[0], minutes=-60)  # older than every vote: the newest id changes anyway
    page = analyst_client.get(reverse("judging:leaderboard"))
    assert bt_calls.call_count == 3 and page.context["board"].judgments == 19
    analyst_client.get(reverse("judging:leaderboard"), {"judge": "gpt-judge"})
    assert bt_calls.call_count == 3  # the judge's board did not change
    plot = rating_cache.leaderboard("human")
    assert plot.judgments == 19


def test_an_import_of_old_judgments_recomputes(analyst_client, bt_calls):
    _study()
    before = analyst_client.get("/api/eval/leaderboard/").json()
    row = {"item_id": "it-1", "dataset": "import", "instruction": "Describe.",
           "image_urls": '["https://e.org/x.png"]', "model_a": "llava", "response_a": "r1",
           "model_b": "blip", "response_b": "r2", "annotator": "crowd-7", "source": "human",
           "choice": "A", "score": "", "turn": "", "timestamp": "2020-01-01T00:00:00+00:00"}
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(row), lineterminator="\n")
    writer.writeheader()
    writer.writerows([row, {**row, "annotator": "crowd-8"}])
    judgments_import("old.csv", out.getvalue().encode(), create_missing=True)
    after = analyst_client.get("/api/eval/leaderboard/").json()
    assert bt_calls.call_count == 2 and after["judgments"] == before["judgments"] + 2


def test_a_deleted_judgment_recomputes(analyst_client, bt_calls, monkeypatch):
    comparisons = _study()
    newest = _vote(comparisons[1], minutes=500)
    assert rating_cache.leaderboard("human").judgments == 19
    newest.delete()  # the newest of its source: the key changes at once
    assert rating_cache.leaderboard("human").judgments == 18 and bt_calls.call_count == 2
    Judgment.objects.filter(pk=Judgment.objects.order_by("pk").first().pk).delete()
    assert rating_cache.leaderboard("human").judgments == 18  # within the re-count interval
    _later(monkeypatch)
    assert rating_cache.leaderboard("human").judgments == 17 and bt_calls.call_count == 3
    assert rating_cache.leaderboard("human").judgments == 17 and bt_calls.call_count == 3


def test_a_cascade_delete_recomputes_after_the_recount(analyst_client, bt_calls, monkeypatch):
    comparisons = _study()
    rating_cache.leaderboard("human")
    comparisons[0].delete()  # its judgments go with it, the newest vote stays
    _later(monkeypatch)
    board = rating_cache.leaderboard("human")
    assert board.judgments == 12 and bt_calls.call_count == 2


def test_an_edit_recomputes_once_the_source_is_marked_changed(bt_calls):
    comparisons = _study(("A", "A", "A"))
    before = rating_cache.leaderboard("human")
    Judgment.objects.filter(comparison=comparisons[0]).update(choice="B")
    assert rating_cache.leaderboard("human").as_dict() == before.as_dict()  # unseen edit
    rating_cache.source_changed("human")
    after = rating_cache.leaderboard("human")
    assert bt_calls.call_count == 2 and after.as_dict() != before.as_dict()
    assert after.as_dict() == leaderboard_build("human").as_dict()


def test_blocking_a_worker_recomputes_the_board_without_blocked_workers(bt_calls):
    workers = make_workers(3)
    _study(workers=workers)
    full = rating_cache.leaderboard("human", exclude_blocked=True)
    worker_block(workers[0], reason="failed gold")
    fewer = rating_cache.leaderboard("human", exclude_blocked=True)
    assert fewer.judgments < full.judgments and bt_calls.call_count == 2
    rating_cache.leaderboard("human")  # every worker's board: its own entry
    rating_cache.leaderboard("human")
    assert bt_calls.call_count == 3


def test_a_new_reference_recomputes(bt_calls):
    _study()
    assert rating_cache.leaderboard("human").reference == "reference"
    from judging.services.responses import reference_model_set

    reference_model_set("llava")
    assert rating_cache.leaderboard("human").reference == "llava" and bt_calls.call_count == 2


def test_an_unknown_split_is_not_cached_and_releases_the_lock(analyst_client):
    _study()
    for _ in range(2):  # the second request would wait on a lock left behind
        assert analyst_client.get(reverse("judging:leaderboard"),
                                  {"split": "nope"}).status_code == 404
        assert analyst_client.get(reverse("judging:leaderboard_ratings_png"),
                                  {"split": "nope"}).status_code == 404


def test_judge_leaderboards_page_shares_the_leaderboard_pages_entries(analyst_client, bt_calls):
    from judging.judges.models import Judge

    Judge.objects.create(name="gpt-judge", kind="pairwise", base_url="http://127.0.0.1:9/v1",
                         model_name="stand-in")
    _study(("A", "B", "A"), source="gpt-judge")
    analyst_client.get(reverse("judging:leaderboard"), {"judge": "gpt-judge"})
    page = analyst_client.get(reverse("judging:judges:leaderboards"))
    assert page.status_code == 200 and bt_calls.call_count == 1
    assert b"gpt-judge" in page.content and b"llava" in page.content


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_first_views_compute_once(bt_calls, monkeypatch):
    _study()
    slow = leaderboard_build

    def build(*args, **kwargs):  # slow enough that every thread arrives while it runs
        threading.Event().wait(0.5)
        return slow(*args, **kwargs)

    monkeypatch.setattr(rating_cache.leaderboards, "leaderboard_build", build)
    barrier, results = threading.Barrier(6), []

    def view():
        barrier.wait()
        try:
            results.append(rating_cache.leaderboard("human").as_dict())
        finally:
            connections.close_all()

    threads = [threading.Thread(target=view) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 6 and all(r == results[0] for r in results)
    assert bt_calls.call_count == 1


def test_a_waiter_computes_when_the_lock_holder_died(bt_calls, monkeypatch):
    _study()
    monkeypatch.setattr(rating_cache, "LOCK_SECONDS", 0.3)
    key = rating_cache._key("pairwise", "human", {"split": "all", "rounds": 1000, "seed": 0},
                            False)
    cache.add(f"{key}:lock", 1, 60)  # a holder that never finishes
    assert rating_cache.leaderboard("human").judgments == 18 and bt_calls.call_count == 1
