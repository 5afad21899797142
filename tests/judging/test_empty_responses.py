"""An empty model output is an answer: public pairwise sets hold rows where the model said
nothing and people judged it (it lost). Such a row imports (the empty response is stored),
the rating page shows "(empty response)" (escaped markup of ours, never the worker's text), a
worker's vote on it is recorded, and the ratings count it."""
import csv
import io
import json

import pytest
from django.urls import reverse

from annotation.engine.services.batches import batch_set_status
from annotation.models import Batch, Instance
from judging.dataset.export import dataset_export
from judging.dataset.imports import dataset_import
from judging.leaderboards import leaderboard_build
from judging.models import Comparison, EvalModel, Judgment, Response
from judging.services.comparisons import comparison_batch_create
from judging.services.judgments.imports import judgments_import
from judging.services.responses import predictions_import
from tests.judging import builders

pytestmark = pytest.mark.django_db

EMPTY = "(empty response)"


def _preference_csv(rows: list[dict]) -> bytes:
    """VisIT-Bench's human-preference layout (vote counts per row)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def _row(n: int, a: str, b: str, votes_a: int, votes_b: int) -> dict:
    return {"image_url": f"https://example.org/pic{n}.png", "instruction": f"Describe pic {n}.",
            "A": a, "B": b, "A_model": "talker", "B_model": "mute",
            "model_selection.A": votes_a, "model_selection.B": votes_b}


class TestAnEmptyAnswerFlowsFromImportToRatings:
    def _import(self):
        data = _preference_csv([
            _row(1, "Two dogs play on the grass.", "", 3, 0),  # mute said nothing and lost
            _row(2, "A red bus.", "A bus.", 1, 1),
        ])
        return judgments_import("prefs.csv", data, create_missing=True)

    def test_the_row_imports_and_the_empty_response_is_stored(self):
        report = self._import()
        assert (report.created, report.unmatched) == (5, [])
        silent = Response.objects.get(model__name="mute",
                                      instance__instruction="Describe pic 1.")
        assert silent.text == ""
        comparison = Comparison.objects.get(instance=silent.instance)
        assert comparison.judgments.filter(source=Judgment.HUMAN).count() == 3
        assert self._import().created == 0  # idempotent: the stored empty answer matches

    def test_the_rating_page_shows_it_and_a_vote_on_it_is_recorded_and_rated(
            self, alice_client):
        self._import()
        silent = Response.objects.get(model__name="mute", text="")
        comparison = Comparison.objects.get(instance=silent.instance)
        batch = comparison_batch_create(comparisons=[comparison], title="Empty answers",
                                        judgments_per_comparison=1, min_seconds=0)
        batch_set_status(batch, Batch.Status.ACTIVE)
        task_url = alice_client.get(reverse("annotation:batch_next", args=[batch.uuid])).url
        html = alice_client.get(task_url).content.decode()
        side = "a" if comparison.response_a_id == silent.pk else "b"
        assert (f'id="response-{side}"><em class="empty-response">{EMPTY}</em></span>'
                in html)
        assert "Two dogs play on the grass." in html  # the other side as it was
        talker_side = "B" if side == "a" else "A"
        before = leaderboard_build(bootstrap_rounds=10)
        assert alice_client.post(task_url, {"choice": talker_side}).status_code == 302
        vote = Judgment.objects.get(comparison=comparison, assignment__isnull=False)
        assert vote.choice == talker_side
        after = leaderboard_build(bootstrap_rounds=10)
        def matches(board):
            return {r["model"]: r["matches"] for r in board.rows}

        assert matches(before) == {"talker": 5, "mute": 5}
        assert matches(after) == {"talker": 6, "mute": 6}
        ranked = [r["model"] for r in after.rows]
        assert ranked == ["talker", "mute"]

    def test_a_blank_inline_answer_is_never_shown_as_markup_from_the_text(self, alice_client):
        """The marker is ours: a response that *reads* like it is escaped as text."""
        inst = builders.instance()
        models = builders.models("m1", "m2")
        a = builders.respond(inst, models["m1"], "   \n ")
        b = builders.respond(inst, models["m2"], '<em class="empty-response">(empty response)</em>')
        comparison = Comparison.objects.create(instance=inst, response_a=a, response_b=b)
        batch = comparison_batch_create(comparisons=[comparison], title="t",
                                        judgments_per_comparison=1, min_seconds=0)
        batch_set_status(batch, Batch.Status.ACTIVE)
        task_url = alice_client.get(reverse("annotation:batch_next", args=[batch.uuid])).url
        html = alice_client.get(task_url).content.decode()
        assert html.count(f'<em class="empty-response">{EMPTY}</em>') == 1  # the blank one
        assert "&lt;em class=&quot;empty-response&quot;&gt;" in html


class TestOtherImportersStoreAnEmptyAnswer:
    def test_predictions(self):
        inst = builders.instance(external_id="item-1")
        rows = [{"item_id": "item-1", "model": "mute", "prediction": ""}]
        report = predictions_import("p.jsonl", "\n".join(json.dumps(r) for r in rows).encode())
        assert report.created == 1
        assert Response.objects.get(instance=inst, model__name="mute").text == ""

    def test_study_dataset_round_trip(self, tmp_path):
        inst = builders.instance()
        models = builders.models("talker", "mute")
        a = builders.respond(inst, models["talker"], "Words.")
        b = Response.objects.create(instance=inst, model=models["mute"], text="")
        Comparison.objects.create(instance=inst, response_a=a, response_b=b)
        dataset_export(tmp_path)
        Instance.objects.all().delete()
        EvalModel.objects.all().delete()
        added = dataset_import(tmp_path)
        assert (added["responses"], added["comparisons"]) == (2, 1)
        assert Response.objects.get(model__name="mute").text == ""
