"""Boards while votes arrive (``judging.board_refresh``): an expensive board a little behind is
served at once, says how far behind it is, and is refreshed once in the background; past the
staleness bounds, for a cheap board, or inside a refresh, it is recomputed in the request."""
import threading
import time
from unittest import mock

import pytest
from django.conf import settings
from django.core.cache import cache
from django.urls import reverse

from judging import board_refresh, rating_cache, ratings
from tests.judging.test_rating_cache import _study, _vote

pytestmark = pytest.mark.django_db(transaction=True)  # a refresh reads in its own connection


@pytest.fixture(autouse=True)
def _empty_cache():
    cache.clear()
    yield
    board_refresh.wait_for_refreshes(30)
    cache.clear()


@pytest.fixture
def expensive(settings):
    """Every board may be served behind (the test boards hold a few judgments)."""
    settings.LEADERBOARD_STALE_MIN_JUDGMENTS = 0
    settings.LEADERBOARD_REFRESH_SECONDS = 0
    settings.LEADERBOARD_STALE_SHARE = 0.5
    settings.LEADERBOARD_STALE_SECONDS = 600  # a slow machine never crosses it unasked
    return settings


@pytest.fixture
def gate(monkeypatch):
    """Background refreshes wait until the test opens the gate (so the views before it see
    the board they would see while a slow refresh runs)."""
    opened = threading.Event()
    run = board_refresh._run
    monkeypatch.setattr(board_refresh, "_run", lambda lock, work: (opened.wait(30),
                                                                    run(lock, work)))
    yield opened
    opened.set()


def _matches(response) -> int:
    return response.context["board"].judgments


@pytest.mark.parametrize("past_the_bounds_meanwhile", [False, True])
def test_a_stale_board_is_served_at_once_says_so_and_is_refreshed_once(
        analyst_client, bt_calls, expensive, gate, past_the_bounds_meanwhile):
    comparisons = _study()  # 18 votes
    page = analyst_client.get(reverse("judging:leaderboard"))
    assert _matches(page) == 18 and "freshness" not in page.content.decode()
    assert page["X-Board-Judgments-Behind"] == "0"
    _vote(comparisons[0], minutes=100)
    _vote(comparisons[1], minutes=101)
    with mock.patch.object(board_refresh, "refresh_in_background",
                           wraps=board_refresh.refresh_in_background) as refreshes:
        stale = analyst_client.get(reverse("judging:leaderboard"))
        again = analyst_client.get(reverse("judging:leaderboard_download", args=["json"]))
    assert _matches(stale) == 18 and again.json()["judgments"] == 18  # served, not recomputed
    html = stale.content.decode()
    assert 'id="freshness"' in html and "As of 2 judgments ago" in html
    assert stale["X-Board-Judgments-Behind"] == again["X-Board-Judgments-Behind"] == "2"
    assert refreshes.call_count == 3  # the page, its list of sources, the download's board
    assert bt_calls.call_count == 1
    if past_the_bounds_meanwhile:  # the page's refresh finds the board too old to build on
        expensive.LEADERBOARD_STALE_SECONDS = 0
    gate.set()
    assert board_refresh.wait_for_refreshes(30)
    assert bt_calls.call_count == 2  # the page's refresh took the board the download's made
    fresh = analyst_client.get(reverse("judging:leaderboard"))
    assert _matches(fresh) == 20 and 'id="freshness"' not in fresh.content.decode()
    assert fresh["X-Board-Judgments-Behind"] == "0"
    # The refresh recomputed the page's board (nested in the page's entry) with both votes.
    assert rating_cache.leaderboard("human").judgments == 20


def test_concurrent_stale_views_start_one_refresh(analyst_client, expensive, monkeypatch):
    comparisons = _study()
    analyst_client.get(reverse("judging:leaderboard"))
    _vote(comparisons[0], minutes=100)
    started = []
    monkeypatch.setattr(board_refresh, "_run", lambda lock, work: started.append(lock))
    for _ in range(5):
        assert _matches(analyst_client.get(reverse("judging:leaderboard"))) == 18
    # One for the page's entry (and one for its list of sources); the lock is never released
    # here, so the later views found it held.
    assert len([lock for lock in started if ":page:" in lock]) == 1


def test_a_small_board_is_recomputed_in_the_request(analyst_client, bt_calls):
    comparisons = _study()
    analyst_client.get(reverse("judging:leaderboard"))
    _vote(comparisons[0], minutes=100)
    page = analyst_client.get(reverse("judging:leaderboard"))
    assert _matches(page) == 19 and page["X-Board-Judgments-Behind"] == "0"


def test_past_the_share_of_votes_the_board_is_recomputed_in_the_request(analyst_client,
                                                                       expensive):
    expensive.LEADERBOARD_STALE_SHARE = 0.1  # 1 of 18
    comparisons = _study()
    analyst_client.get(reverse("judging:leaderboard"))
    _vote(comparisons[0], minutes=100)
    assert _matches(analyst_client.get(reverse("judging:leaderboard"))) == 18  # 1 behind: served
    board_refresh.wait_for_refreshes(30)
    _vote(comparisons[0], minutes=101)
    _vote(comparisons[1], minutes=102)
    assert _matches(analyst_client.get(reverse("judging:leaderboard"))) == 21  # 2 behind: now


def test_past_the_seconds_the_board_is_recomputed_in_the_request(analyst_client, expensive,
                                                                 monkeypatch):
    comparisons = _study()
    analyst_client.get(reverse("judging:leaderboard"))
    _vote(comparisons[0], minutes=100)
    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now + expensive.LEADERBOARD_STALE_SECONDS + 1)
    page = analyst_client.get(reverse("judging:leaderboard"))
    assert _matches(page) == 19 and page["X-Board-Judgments-Behind"] == "0"


def test_a_deleted_vote_is_never_served_stale(analyst_client, expensive):
    comparisons = _study()
    analyst_client.get(reverse("judging:leaderboard"))
    newest = _vote(comparisons[0], minutes=100)
    assert _matches(analyst_client.get(reverse("judging:leaderboard"))) == 18
    assert board_refresh.wait_for_refreshes(30)
    _vote(comparisons[1], minutes=101)
    newest.delete()  # the entry's newest judgment is gone: not only additions since
    assert _matches(analyst_client.get(reverse("judging:leaderboard"))) == 19


def test_a_failed_refresh_leaves_the_board_served_and_lets_the_next_view_retry(
        analyst_client, expensive):
    comparisons = _study()
    analyst_client.get(reverse("judging:leaderboard"))
    _vote(comparisons[0], minutes=100)
    with mock.patch.object(ratings, "leaderboard", side_effect=RuntimeError("boom")):
        assert _matches(analyst_client.get(reverse("judging:leaderboard"))) == 18
        assert board_refresh.wait_for_refreshes(30)
    assert _matches(analyst_client.get(reverse("judging:leaderboard"))) == 18  # retried
    assert board_refresh.wait_for_refreshes(30)
    assert _matches(analyst_client.get(reverse("judging:leaderboard"))) == 19


def test_the_study_board_and_its_api_say_how_fresh_they_are(client, expensive, gate):
    from studies.models import Study

    comparisons = _study()
    study = Study.objects.get(slug=settings.DEFAULT_STUDY_SLUG)
    study.visibility = Study.Visibility.PUBLIC
    study.save()
    url, api = f"/s/{study.slug}/board/", f"/api/studies/{study.slug}/leaderboard/"
    assert client.get(url)["X-Board-Judgments-Behind"] == "0"
    assert client.get(api).json()["judgments"] == 18
    _vote(comparisons[0], minutes=100)
    page, board = client.get(url), client.get(api)
    assert "As of 1 judgment ago" in page.content.decode()
    assert board.json()["judgments"] == 18 and board["X-Board-Judgments-Behind"] == "1"


def test_a_board_behind_is_refreshed_only_once_it_is_refresh_seconds_behind(
        analyst_client, expensive, monkeypatch):
    expensive.LEADERBOARD_REFRESH_SECONDS = 10
    comparisons = _study()
    analyst_client.get(reverse("judging:leaderboard"))
    _vote(comparisons[0], minutes=100)
    started = []
    monkeypatch.setattr(board_refresh, "_run", lambda lock, work: started.append(lock))
    assert _matches(analyst_client.get(reverse("judging:leaderboard"))) == 18
    assert started == []  # computed moments ago: served without a refresh
    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now + 11)
    assert _matches(analyst_client.get(reverse("judging:leaderboard"))) == 18
    assert [lock for lock in started if ":page:" in lock]


def test_a_board_being_refreshed_is_still_served_to_other_views(analyst_client, expensive,
                                                                monkeypatch):
    """The page's refresh recomputes the board nested in it; until it is stored, the JSON
    download (which reads that board alone) is served the one before, not made to wait."""
    from judging import leaderboards

    comparisons = _study()
    analyst_client.get(reverse("judging:leaderboard"))
    started, release = threading.Event(), threading.Event()
    build = leaderboards.leaderboard_build

    def slow_in_refresh(*args, **kwargs):
        if board_refresh.refreshing():
            started.set()
            release.wait(30)
        return build(*args, **kwargs)

    monkeypatch.setattr(leaderboards, "leaderboard_build", slow_in_refresh)
    _vote(comparisons[0], minutes=100)
    _vote(comparisons[1], minutes=101)
    assert _matches(analyst_client.get(reverse("judging:leaderboard"))) == 18
    assert started.wait(30)  # the refresh is computing the nested board now
    downloads = []
    reader = threading.Thread(target=lambda: downloads.append(analyst_client.get(
        reverse("judging:leaderboard_download", args=["json"]))))
    reader.start()
    reader.join(10)
    finished = not reader.is_alive()
    release.set()
    reader.join(30)
    assert finished, "the download waited for the refresh"
    assert downloads[0].json()["judgments"] == 18 and downloads[0]["X-Board-Judgments-Behind"] == "2"
    assert board_refresh.wait_for_refreshes(30)
    assert rating_cache.leaderboard("human").judgments == 20


def test_a_page_built_on_a_board_behind_says_how_far_behind_it_is(analyst_client, expensive,
                                                                  gate):
    """Stored after the board it shows, the page is still as far behind as that board: every
    later view of it says so (and is held to the bounds by it), not only the first."""
    comparisons = _study()
    analyst_client.get(reverse("judging:leaderboard_download", args=["json"]))  # the board
    _vote(comparisons[0], minutes=100)
    first = analyst_client.get(reverse("judging:leaderboard"))  # the page computed now, on it
    again = analyst_client.get(reverse("judging:leaderboard"))
    assert _matches(first) == _matches(again) == 18
    assert first["X-Board-Judgments-Behind"] == again["X-Board-Judgments-Behind"] == "1"
    assert "As of 1 judgment ago" in again.content.decode()


def test_entries_stored_together_share_one_count(analyst_client):
    """The page, the boards under it and the list of sources are stored at once: one count of
    each scope's judgments (each reads a whole index), not one per entry; the others move it
    on over the ids since."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    _study()
    with CaptureQueriesContext(connection) as queries:
        analyst_client.get(reverse("judging:leaderboard"))
    whole = [q["sql"] for q in queries.captured_queries
             if "COUNT(" in q["sql"] and 'FROM "judging_judgment"' in q["sql"]
             and '"judging_judgment"."id" >' not in q["sql"] and "JOIN" not in q["sql"]
             and "created_at" not in q["sql"]]
    assert len(whole) == 2, whole  # the human judgments, and every source's (the sources list)


def test_a_view_reads_the_newest_judgment_once_per_scope(client, expensive, gate):
    """The study board's entries (its page, category rates, sources) served behind check the
    newest judgment and the judgments after them once per view, not once per entry."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from studies.models import Study

    comparisons = _study()
    study = Study.objects.get(slug=settings.DEFAULT_STUDY_SLUG)
    study.visibility = Study.Visibility.PUBLIC
    study.save()
    client.get(f"/s/{study.slug}/board/")
    _vote(comparisons[0], minutes=100)
    with CaptureQueriesContext(connection) as queries:
        page = client.get(f"/s/{study.slug}/board/")
    assert page["X-Board-Judgments-Behind"] == "1"
    newest = [q for q in queries.captured_queries  # rating_cache._stamp's query
              if "MAX(" in q["sql"] and 'AS "reference" FROM "judging_judgment"' in q["sql"]]
    assert len(newest) == 2  # the human judgments', every source's (the list of sources)
