"""How a board counts its votes (issue #27): ``?aggregation=`` (majority, or one verdict per
comparison under a reliability model) and ``?both_bad=`` (a tie, or left out), through the page,
its JSON download and the API, each a part of the cache key."""
import numpy as np
import pytest
from django.urls import reverse
from django.utils import timezone

from judging import rating_cache, vote_aggregation
from judging.models import Judgment
from tests.judging import builders

pytestmark = pytest.mark.django_db

PLANTED = ["strong", "medium", "weak"]  # the planted order, best first
GOOD = [f"good{k}" for k in range(8)]
SPAMMERS = [f"lazy{k}" for k in range(4)]  # always click "A"
ITEMS_PER_PAIR = 40
VOTES_PER_ITEM = 5


def _planted_crowd(seed=1):
    """Three models, the weaker always shown as A; each comparison's planted winner is the
    stronger model 75 % of the time; five votes per comparison from twelve workers: eight
    right 90 % of the time, four who always answer "A" (a third of the crowd). Every vote
    counted alike lifts whoever sits on side A, the weaker model."""
    rng = np.random.default_rng(seed)
    ms = builders.models(*PLANTED)
    votes, now = [], timezone.now()
    for a, b in (("weak", "medium"), ("weak", "strong"), ("medium", "strong")):
        for _ in range(ITEMS_PER_PAIR):
            comparison = builders.comparison(ms[a], ms[b])
            truth = "B" if rng.random() < 0.75 else "A"
            for worker in rng.choice(GOOD + SPAMMERS, VOTES_PER_ITEM, replace=False):
                if worker in SPAMMERS:
                    choice = "A"
                else:
                    choice = truth if rng.random() < 0.9 else {"A": "B", "B": "A"}[truth]
                votes.append(Judgment(comparison=comparison, source=Judgment.HUMAN,
                                      annotator=str(worker), choice=choice, created_at=now))
    Judgment.objects.bulk_create(votes)


def _board(client, **query):
    response = client.get(reverse("judging:leaderboard_download", args=["json"]), query)
    assert response.status_code == 200, response.content
    return response.json()


def _order(board):
    return [r["model"] for r in sorted(board["rows"], key=lambda r: -r["rating"])]


def _discordant_pairs(order):
    """Kendall distance to the planted order: pairs of models ranked the wrong way round."""
    pos = {m: k for k, m in enumerate(order)}
    return sum(pos[PLANTED[i]] > pos[PLANTED[j]]
               for i in range(len(PLANTED)) for j in range(i + 1, len(PLANTED)))


class TestAggregation:
    def test_dawid_skene_ranks_a_spammer_crowd_closer_to_the_planted_order(self, analyst_client):
        _planted_crowd()
        majority = _board(analyst_client)
        weighted = _board(analyst_client, aggregation="dawid-skene")
        assert majority["aggregation"] == "majority"
        assert weighted["aggregation"] == "dawid-skene"
        # majority: a match per vote; the model: a match per comparison
        assert majority["judgments"] == 3 * ITEMS_PER_PAIR * VOTES_PER_ITEM
        assert weighted["judgments"] == 3 * ITEMS_PER_PAIR
        assert _order(weighted) != _order(majority)
        assert _discordant_pairs(_order(weighted)) < _discordant_pairs(_order(majority))
        assert _order(weighted) == PLANTED

    def test_the_page_and_the_api_offer_and_show_the_choice(self, analyst_client):
        _planted_crowd()
        html = analyst_client.get(reverse("judging:leaderboard"),
                                  {"aggregation": "mace"}).content.decode()
        assert '<option value="mace" selected>' in html
        assert 'id="aggregated">120 comparisons decided by mace' in html
        api = analyst_client.get("/api/eval/leaderboard/",
                                 {"aggregation": "dawid-skene", "rounds": 50})
        assert api.status_code == 200 and api.json()["judgments"] == 3 * ITEMS_PER_PAIR

    @pytest.mark.parametrize("where", ["page", "json", "png", "api"])
    def test_an_unknown_aggregation_is_a_400_that_names_the_choices(self, analyst_client,
                                                                    where):
        url = {"page": reverse("judging:leaderboard"),
               "json": reverse("judging:leaderboard_download", args=["json"]),
               "png": reverse("judging:leaderboard_ratings_png"),
               "api": "/api/eval/leaderboard/"}[where]
        response = analyst_client.get(url, {"aggregation": "glad"})
        assert response.status_code == 400
        if where == "api":
            assert "majority, dawid-skene, mace" in response.json()["aggregation"][0]

    def test_the_choice_is_part_of_the_cache_key(self):
        _planted_crowd()
        majority = rating_cache.leaderboard(bootstrap_rounds=50)  # cached first
        weighted = rating_cache.leaderboard(bootstrap_rounds=50, aggregation="dawid-skene")
        assert (majority.aggregation, weighted.aggregation) == ("majority", "dawid-skene")
        assert weighted.judgments == 3 * ITEMS_PER_PAIR != majority.judgments
        page = rating_cache.leaderboard_page(aggregation="mace")
        assert page["board"].aggregation == "mace"
        assert rating_cache.leaderboard_page()["board"].aggregation == "majority"

    @pytest.mark.parametrize("aggregation", ["majority", "dawid-skene", "mace"])
    def test_rejected_votes_leave_the_board_under_every_aggregation(self, analyst_client,
                                                                    aggregation):
        _planted_crowd()
        before = {r["model"]: r["matches"] for r in _board(analyst_client,
                                                            aggregation=aggregation)["rows"]}
        # every vote on weak-vs-strong is rejected, as its assignments' rejection would
        Judgment.objects.filter(comparison__response_a__model__name="weak",
                                comparison__response_b__model__name="strong").update(
            rejected=True)
        rating_cache.source_changed(Judgment.HUMAN)
        after = {r["model"]: r["matches"] for r in _board(analyst_client,
                                                           aggregation=aggregation)["rows"]}
        per_pair = ITEMS_PER_PAIR * (VOTES_PER_ITEM if aggregation == "majority" else 1)
        assert before["weak"] == before["strong"] == 2 * per_pair
        assert after == {"weak": per_pair, "strong": per_pair, "medium": 2 * per_pair}

    @pytest.mark.parametrize("aggregation", ["dawid-skene", "mace"])
    def test_a_board_without_votes_is_empty_under_a_model_too(self, analyst_client, aggregation):
        board = _board(analyst_client, aggregation=aggregation)
        assert board["judgments"] == 0 and board["rows"] == []
        page = analyst_client.get(reverse("judging:leaderboard"), {"aggregation": aggregation})
        assert page.status_code == 200

    def test_the_category_win_rates_count_the_same_way(self):
        from judging.leaderboards import category_win_rates
        from judging.services.responses import reference_model_set

        _planted_crowd()
        reference_model_set("strong")
        by_vote = category_win_rates()["Chart reading"]
        by_item = category_win_rates(aggregation="dawid-skene")["Chart reading"]
        assert by_vote["weak"][1] == ITEMS_PER_PAIR * VOTES_PER_ITEM
        assert by_item["weak"][1] == ITEMS_PER_PAIR
        # the always-A clickers hand the weak model (side A) wins the model takes back
        assert by_item["weak"][0] < by_vote["weak"][0]

    def test_majority_is_the_only_choice_without_a_registered_model(self, monkeypatch):
        monkeypatch.setattr(vote_aggregation, "_AGGREGATORS", {})
        assert vote_aggregation.aggregations() == ("majority",)
        with pytest.raises(vote_aggregation.UnknownChoice, match="got 'dawid-skene'"):
            vote_aggregation.check_aggregation("dawid-skene")


def _votes_with_both_bad():
    """alpha vs beta: 6 A, 2 B and 4 "both bad" votes, one comparison per vote."""
    ms = builders.models("alpha", "beta")
    now = timezone.now()
    Judgment.objects.bulk_create(
        Judgment(comparison=builders.comparison(ms["alpha"], ms["beta"]), source=Judgment.HUMAN,
                 annotator=f"w{k}", choice=choice, created_at=now)
        for k, choice in enumerate(["A"] * 6 + ["B"] * 2 + ["bad"] * 4))


class TestBothBad:
    def test_both_bad_counts_as_a_tie_unless_the_board_excludes_it(self, analyst_client):
        _votes_with_both_bad()
        as_tie = _board(analyst_client)
        excluded = _board(analyst_client, both_bad="exclude")
        assert as_tie["both_bad"] == "tie" and excluded["both_bad"] == "exclude"
        assert [r["matches"] for r in as_tie["rows"]] == [12, 12]
        assert [r["matches"] for r in excluded["rows"]] == [8, 8]
        assert as_tie["judgments"] == 12 and excluded["judgments"] == 8
        # four ties pulled alpha's share of points towards a half: without them it is larger
        rating = {b["both_bad"]: {r["model"]: r["rating"] for r in b["rows"]}
                  for b in (as_tie, excluded)}
        assert (rating["exclude"]["alpha"] - rating["exclude"]["beta"]
                > rating["tie"]["alpha"] - rating["tie"]["beta"])

    def test_the_page_says_so_and_keeps_the_choice(self, analyst_client):
        _votes_with_both_bad()
        html = analyst_client.get(reverse("judging:leaderboard"),
                                  {"both_bad": "exclude"}).content.decode()
        assert '"both bad" votes left out' in html
        assert '<option value="exclude" selected>' in html
        assert "8 judgments" in html
        assert "12 judgments" in analyst_client.get(reverse("judging:leaderboard")).content.decode()

    def test_the_choice_is_part_of_the_cache_key(self):
        _votes_with_both_bad()
        assert rating_cache.leaderboard(bootstrap_rounds=20).judgments == 12
        assert rating_cache.leaderboard(bootstrap_rounds=20, both_bad="exclude").judgments == 8
        assert rating_cache.leaderboard_page(both_bad="exclude")["board"].judgments == 8

    def test_both_bad_composes_with_a_reliability_model(self, analyst_client):
        _votes_with_both_bad()
        assert _board(analyst_client, aggregation="dawid-skene",
                      both_bad="exclude")["judgments"] == 8

    @pytest.mark.parametrize("value", ["drop", "TIE"])
    def test_an_unknown_value_is_a_400(self, analyst_client, value):
        page = analyst_client.get(reverse("judging:leaderboard"), {"both_bad": value})
        assert page.status_code == 400
        api = analyst_client.get("/api/eval/leaderboard/", {"both_bad": value})
        assert api.status_code == 400 and "tie, exclude" in api.json()["both_bad"][0]

    def test_the_ratings_command_takes_both(self):
        from io import StringIO

        from django.core.management import call_command
        _votes_with_both_bad()
        out = StringIO()
        call_command("ratings", "--format", "json", "--rounds", "20", "--both-bad", "exclude",
                     "--aggregation", "mace", stdout=out)
        assert '"both_bad": "exclude"' in out.getvalue()
        assert '"aggregation": "mace"' in out.getvalue()
