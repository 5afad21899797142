"""Boards honest about thin data (issue #27, item 5): a model with few matches is provisional
and unranked, ranks are among the ranked models, intervals are shown clipped to what the data
supports, and trial batches' votes count on no board until an analyst includes them."""
import csv
import io
import re

import pytest
from django.urls import reverse

from annotation.engine.results import answer_columns, result_rows
from annotation.models import Batch
from judging import rating_cache, ratings, thin_data
from judging.judges.models import Judge
from judging.leaderboards import leaderboard_build, leaderboard_csv
from judging.models import Comparison, Judgment
from judging.services.judgments.record import judgments_record
from tests.factories import make_workers
from tests.judging import builders

pytestmark = pytest.mark.django_db
ROUNDS = 200


def _imported_votes(pairs):
    """Human votes without an assignment (an imported file): ``(model_a, model_b, choices)``,
    one comparison per vote."""
    rows = []
    for a, b, choices in pairs:
        for choice in choices:
            rows.append({"source": Judgment.HUMAN, "annotator": "imported", "choice": choice,
                         "comparison": builders.comparison(a, b)})
    judgments_record(rows)


def _established_and_newcomer():
    """Three models with 40 matches among them (20 per pair) and a newcomer that won its only
    4, against gamma (which so has 44)."""
    ms = builders.models("alpha", "beta", "gamma", "newcomer")
    _imported_votes([(ms["alpha"], ms["beta"], "A" * 13 + "B" * 7),
                     (ms["beta"], ms["gamma"], "A" * 12 + "B" * 8),
                     (ms["alpha"], ms["gamma"], "A" * 15 + "B" * 5),
                     (ms["newcomer"], ms["gamma"], "AAAA")])
    return ms


class TestProvisionalModels:
    def test_a_model_with_four_matches_is_provisional_unranked_and_listed_last(self):
        _established_and_newcomer()
        board = leaderboard_build(bootstrap_rounds=ROUNDS)
        rows = {r["model"]: r for r in board.rows}
        assert board.min_matches == 30  # the default of LEADERBOARD_MIN_MATCHES
        assert rows["newcomer"]["matches"] == 4
        assert rows["newcomer"]["provisional"] is True and rows["newcomer"]["rank"] is None
        # undefeated, so its rating is the highest on the board ...
        assert rows["newcomer"]["rating"] == max(r["rating"] for r in board.rows)
        # ... yet rank 1 goes to a model the data has measured, and it is listed last
        assert board.rows[-1]["model"] == "newcomer"
        ranked = [r for r in board.rows if not r["provisional"]]
        assert [r["model"] for r in ranked] == ["alpha", "beta", "gamma"]
        assert [r["matches"] for r in ranked] == [40, 40, 44]
        assert all(isinstance(r["rank"], int) for r in ranked)
        assert ranked[0]["rank"] == 1

    def test_the_shown_interval_of_a_thin_model_is_clipped_and_the_full_one_kept(self):
        _established_and_newcomer()
        board = leaderboard_build(bootstrap_rounds=ROUNDS)
        rows = {r["model"]: r for r in board.rows}
        low, high = board.ci_span
        ranked = [r for r in board.rows if not r["provisional"]]
        assert low == min(r["ci_low"] for r in ranked)
        assert high == max(r["ci_high"] for r in ranked)
        newcomer = rows["newcomer"]
        assert newcomer["ci_high"] > high  # the bootstrap reaches far out ...
        assert f"above {high:.0f}" in newcomer["ci_text"]  # ... the page says only "above"
        for r in ranked:  # ranked intervals are inside the span: shown as they are
            assert r["ci_text"] == f"{r['ci_low']:.0f} – {r['ci_high']:.0f}"

    def test_the_threshold_is_a_setting(self, settings):
        _established_and_newcomer()
        settings.LEADERBOARD_MIN_MATCHES = 4
        rows = {r["model"]: r for r in leaderboard_build(bootstrap_rounds=ROUNDS).rows}
        assert not rows["newcomer"]["provisional"] and rows["newcomer"]["rank"] >= 1
        settings.LEADERBOARD_MIN_MATCHES = 45
        rows = leaderboard_build(bootstrap_rounds=ROUNDS).rows
        assert all(r["provisional"] and r["rank"] is None for r in rows)

    def test_page_csv_json_and_api_mark_the_model_and_give_it_no_rank(self, analyst_client):
        _established_and_newcomer()
        page = analyst_client.get(reverse("judging:leaderboard")).content.decode()
        main = re.search(r'<table class="leaderboard card" id="leaderboard">.*?</table>', page,
                         re.S).group(0)
        provisional = re.search(r'<table class="leaderboard card" id="provisional">.*?</table>',
                                page, re.S).group(0)
        assert "newcomer" not in main and "newcomer" in provisional
        assert "fewer than 30 matches" in page and 'id="ci-note"' in page
        row = re.search(r"<tr[^>]*>(?:(?!</tr>).)*newcomer.*?</tr>", provisional, re.S).group(0)
        assert re.search(r'<td class="num"><span title="provisional[^"]*">—</span></td>', row)

        csv_text = analyst_client.get(reverse("judging:leaderboard_download", args=["csv"]))
        by_model = {r["model"]: r for r in csv.DictReader(io.StringIO(
            csv_text.content.decode()))}
        assert by_model["newcomer"]["rank"] == "" and by_model["newcomer"]["provisional"] == "True"
        assert by_model["alpha"]["rank"] == "1" and by_model["alpha"]["provisional"] == "False"

        api = analyst_client.get("/api/eval/leaderboard/", {"rounds": 100}).json()
        newcomer = next(r for r in api["rows"] if r["model"] == "newcomer")
        assert newcomer["rank"] is None and newcomer["provisional"] is True
        assert api["min_matches"] == 30 and len(api["ci_span"]) == 2

    def test_the_csv_leaves_a_provisional_rank_empty(self):
        _established_and_newcomer()
        lines = leaderboard_csv(leaderboard_build(bootstrap_rounds=ROUNDS)).splitlines()
        assert lines[0].endswith(",is_reference,provisional")
        assert lines[-1].startswith(",newcomer,")


class TestRanksAmongRankedModels:
    def test_a_provisional_interval_never_pushes_a_ranked_model_down(self):
        # without the rule the ranked model is 2nd: the provisional lower bound is above it
        assert list(ratings.ranks_from_ci([900, 1200], [1100, 3000])) == [2, 1]
        assert thin_data.ranks_among_ranked([900, 1200], [1100, 3000], [True, False]) == [1, None]

    def test_ends_past_the_span_read_below_and_above(self):
        span = (850.0, 1200.0)
        assert thin_data.interval_text(-2258, 4295, span) == "below 850 – above 1200"
        assert thin_data.interval_text(900, 1100, span) == "900 – 1100"
        assert thin_data.interval_text(1500, 2500, span) == "above 1200"
        assert thin_data.interval_text(-900, 700, span) == "below 850"


class TestJudgeBoards:
    def test_a_judges_thin_board_marks_its_models_provisional(self, analyst_client):
        ms = builders.models("strong", "weak")
        judge = Judge.objects.create(name="thin-judge", kind=Judge.Kind.PAIRWISE,
                                     model_name="stand-in", base_url="http://127.0.0.1:9/v1")
        judgments_record([{"choice": "A", "comparison": builders.comparison(ms["strong"],
                                                                             ms["weak"])}
                          for _ in range(3)], judge=judge)
        html = analyst_client.get(reverse("judging:judges:leaderboards")).content.decode()
        table = re.search(r"<h2>thin-judge</h2>\s*<table.*?</table>", html, re.S).group(0)
        assert table.count(">provisional</span>") == 2
        assert not re.search(r"<tr><td>\d+</td>", table)  # no rank for either


class TestThinSplits:
    def test_a_turn_split_with_thin_data_ranks_nobody(self, analyst_client):
        names = ["m1", "m2", "m3", "m4", "m5"]
        ms = builders.models(*names)
        rows = []
        for i, a in enumerate(names):
            b = names[(i + 1) % len(names)]
            inst = builders.conversation(ms[a], ms[b])
            comparison = Comparison.objects.create(
                instance=inst, response_a=inst.responses.get(model=ms[a], turn=1),
                response_b=inst.responses.get(model=ms[b], turn=1))
            rows += [{"source": Judgment.HUMAN, "annotator": f"w{k}", "choice": "A",
                      "comparison": comparison, "turn": "2"} for k in range(3)]
        judgments_record(rows)
        board = leaderboard_build(split="turn:2", bootstrap_rounds=ROUNDS)
        assert len(board.rows) == 5 and board.judgments == 15
        assert all(r["provisional"] and r["rank"] is None for r in board.rows)
        page = analyst_client.get(reverse("judging:leaderboard"), {"split": "turn:2"})
        html = page.content.decode()
        assert 'id="none-ranked"' in html and 'id="leaderboard"' not in html
        assert not re.search(r'<td class="num">1</td>', html)  # no rank 1 anywhere


class TestTrialBatches:
    def _votes(self, *, trial):
        ms = builders.models("llava", "blip")
        comparisons = [(builders.comparison(ms["llava"], ms["blip"]), "AAB"),
                       (builders.comparison(ms["blip"], ms["llava"]), "BBA")]
        return builders.crowd_batch(comparisons, make_workers(3), trial=trial)

    def test_trial_votes_count_on_no_board_until_included(self, analyst_client):
        batch = self._votes(trial=True)
        assert Judgment.objects.filter(assignment__batch=batch).count() == 6  # all kept
        assert leaderboard_build(bootstrap_rounds=ROUNDS).judgments == 0
        included = leaderboard_build(include_trial=True, bootstrap_rounds=ROUNDS)
        assert included.judgments == 6 and {r["model"] for r in included.rows} == {"llava",
                                                                                   "blip"}
        api = analyst_client.get("/api/eval/leaderboard/", {"rounds": 50}).json()
        assert api["judgments"] == 0 and api["rows"] == []
        api = analyst_client.get("/api/eval/leaderboard/",
                                 {"rounds": 50, "include_trial": "1"}).json()
        assert api["judgments"] == 6 and api["include_trial"] is True
        page = analyst_client.get(reverse("judging:leaderboard")).content.decode()
        assert 'id="empty"' in page and 'id="include-trial"' in page
        page = analyst_client.get(reverse("judging:leaderboard"),
                                  {"include_trial": "1"}).content.decode()
        assert "6 judgments" in page and 'id="trial-included"' in page
        majorities = analyst_client.get("/api/eval/majorities/").json()["comparisons"]
        assert majorities == []

    def test_trial_votes_are_in_the_batchs_own_results(self):
        batch = self._votes(trial=True)
        rows = list(result_rows([batch], answer_columns([batch])))
        assert sorted(r["answer.choice"] for r in rows) == sorted("AABBBA")

    def test_an_ordinary_batch_counts_and_marking_it_trial_takes_it_off_at_once(self):
        batch = self._votes(trial=False)
        assert rating_cache.leaderboard(bootstrap_rounds=ROUNDS).judgments == 6
        Batch.objects.filter(pk=batch.pk).update(trial=True)  # e.g. in the admin, afterwards
        assert rating_cache.leaderboard(bootstrap_rounds=ROUNDS).judgments == 0
        assert rating_cache.leaderboard(bootstrap_rounds=ROUNDS,
                                        include_trial=True).judgments == 6
