"""Per-batch answer options on the choice HITs (forced choice by default; tie, both bad and
"how much better" where a batch offers them), flowing HIT → judgment → ratings → reliability;
a worker's problem report, which is never a vote; a batch's minimum time from its HIT type."""
from datetime import timedelta

import krippendorff
import numpy as np
import pytest
from django.urls import reverse

from agreement.reports.reliability import CODES, _hit_type_reliability
from annotation.engine.hit_types import get_hit_type
from annotation.engine.services.batches import RowError, batch_create_from_rows, batch_set_status
from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.errors import AnswerInvalid
from annotation.engine.services.submissions import assignment_submit
from annotation.engine.services.workers import worker_for_user
from annotation.models import Assignment, Batch, Task, TaskProblem
from judging import ratings
from judging.models import Comparison, Judgment
from judging.selectors import pairwise_counts, pairwise_judgments
from tests.factories import make_workers
from tests.judging import builders

pytestmark = pytest.mark.django_db


def _comparison(a="LLaVA", b="BLIP"):
    inst = builders.instance()
    ms = builders.models(a, b)
    return Comparison.objects.create(instance=inst, response_a=builders.respond(inst, ms[a]),
                                     response_b=builders.respond(inst, ms[b]))


def _batch(rows, *, hit_type="pairwise_ab", n=1, **options):
    batch = batch_create_from_rows(hit_type=hit_type, title="t", rows=rows,
                                   assignments_per_task=n, min_seconds=0, **options)
    return batch_set_status(batch, Batch.Status.ACTIVE)


def _vote(batch, worker, data):
    assignment = task_claim_next(batch=batch, worker=worker)
    return assignment_submit(assignment=assignment, data=data,
                             now=assignment.claimed_at + timedelta(seconds=30)).assignment


class TestForcedChoiceStaysTheDefault:
    def test_a_default_batch_refuses_a_tie_and_both_bad(self):
        batch = _batch([{"comparison": str(_comparison().uuid)}])
        assert batch.hit_options == {"answers": "ab", "strength": False}
        worker, = make_workers(1)
        assignment = task_claim_next(batch=batch, worker=worker)
        for choice in ("tie", "bad", "C", ""):
            with pytest.raises(AnswerInvalid, match="choose one of A, B|not offered"):
                assignment_submit(assignment=assignment, data={"choice": choice},
                                  now=assignment.claimed_at + timedelta(seconds=30))
        assert not Judgment.objects.exists()

    def test_a_batch_made_before_the_options_existed_keeps_forced_choice(self):
        batch = _batch([{"comparison": str(_comparison().uuid)}])
        Batch.objects.filter(pk=batch.pk).update(hit_options={})
        batch.refresh_from_db()
        assert get_hit_type("pairwise_ab").options_of(batch)["answers"] == "ab"


class TestOptionsAreCheckedAtUpload:
    @pytest.mark.parametrize("options, message", [
        ({"answers": "abc"}, "answers"),
        ({"ties": True}, "not offered by pairwise_ab"),
        ("yes", "JSON object"),
    ])
    def test_bad_options_are_refused_and_nothing_is_written(self, options, message):
        with pytest.raises(RowError, match=message):
            _batch([{"comparison": str(_comparison().uuid)}], hit_options=options)
        assert not Batch.objects.exists()

    def test_a_type_without_options_refuses_any(self):
        with pytest.raises(RowError, match="not offered by rubric_score"):
            batch_create_from_rows(hit_type="rubric_score", title="t", rows=[{}],
                                   hit_options={"answers": "ab_tie"})

    def test_a_gold_answer_outside_the_choices_is_refused(self):
        with pytest.raises(RowError, match="Row 1: _gold_answer"):
            _batch([{"comparison": str(_comparison().uuid), "_gold_answer": '{"choice": "C"}'}])


class TestTiesAndBothBadFlowThrough:
    def test_every_answer_is_stored_as_its_own_choice_with_its_strength(self):
        comparisons = [_comparison() for _ in range(4)]
        batch = _batch([{"comparison": str(c.uuid)} for c in comparisons],
                       hit_options={"answers": "ab_tie_bad", "strength": True})
        worker, = make_workers(1)
        with pytest.raises(AnswerInvalid, match="How much better"):
            assignment = task_claim_next(batch=batch, worker=worker)
            assignment_submit(assignment=assignment, data={"choice": "A"},
                              now=assignment.claimed_at + timedelta(seconds=30))
        assignment = Assignment.objects.get(worker=worker)
        assignment_submit(assignment=assignment, data={"choice": "A", "strength": "much"},
                          now=assignment.claimed_at + timedelta(seconds=30))
        _vote(batch, worker, {"choice": "B", "strength": "slightly"})
        _vote(batch, worker, {"choice": "tie", "strength": "much"})  # no side won: no strength
        _vote(batch, worker, {"choice": "bad"})
        stored = list(Judgment.objects.order_by("pk").values_list("choice", "meta"))
        assert stored == [("A", {"strength": "much"}), ("B", {"strength": "slightly"}),
                          ("tie", {}), ("bad", {})]

    def test_ratings_count_both_bad_as_a_tie_and_majorities_keep_it_apart(self):
        comparison = _comparison()
        batch = _batch([{"comparison": str(comparison.uuid)}], n=3,
                       hit_options={"answers": "ab_tie_bad"})
        for worker, choice in zip(make_workers(3), ("bad", "bad", "A"), strict=True):
            _vote(batch, worker, {"choice": choice})
        rows = [r[:3] for r in pairwise_judgments()]
        assert sorted(rows) == [("LLaVA", "BLIP", "A"), ("LLaVA", "BLIP", "bad"),
                                ("LLaVA", "BLIP", "bad")]
        models, wins, ties = pairwise_counts()
        index = {m: i for i, m in enumerate(models)}
        assert wins[index["LLaVA"], index["BLIP"]] == 1 and wins.sum() == 1
        assert ties[index["LLaVA"], index["BLIP"]] == 2  # both bad: rated as ties
        # the same as the rows given with ties in their place
        as_ties = [(a, b, "tie" if o == "bad" else o) for a, b, o in rows]
        assert ratings.online_elo(rows) == ratings.online_elo(as_ties)
        assert ratings.majority_vote(["bad", "bad", "A"])[0] == "bad"

    def test_reliability_keeps_tie_and_both_bad_as_their_own_categories(self):
        votes, matrix = [], []
        labels = [("A", "A", "tie"), ("bad", "bad", "bad"), ("tie", "tie", "A"),
                  ("B", "bad", "B"), ("A", "A", "A")]
        for item, choices in enumerate(labels):
            for worker, choice in enumerate(choices):
                votes.append(((item, ""), f"w{worker}", choice, worker + 1))
        for worker in range(3):
            matrix.append([CODES[labels[item][worker]] for item in range(len(labels))])
        section = _hit_type_reliability(votes, seed=1, rounds=50)
        expected = krippendorff.alpha(reliability_data=np.array(matrix),
                                      level_of_measurement="nominal")
        assert section["krippendorff_alpha"]["alpha"] == pytest.approx(expected, abs=1e-6)
        merged = [[CODES["tie"] if v == CODES["bad"] else v for v in row] for row in matrix]
        assert expected != pytest.approx(krippendorff.alpha(
            reliability_data=np.array(merged), level_of_measurement="nominal"))

    def test_multi_turn_offers_the_same_answers_per_turn_and_strength_overall(self):
        ms = builders.models("LLaVA", "BLIP")
        inst = builders.conversation(ms["LLaVA"], ms["BLIP"])
        first = {r.model.name: r for r in inst.responses.filter(turn=1)}
        comparison = Comparison.objects.create(instance=inst, response_a=first["LLaVA"],
                                               response_b=first["BLIP"])
        batch = _batch([{"comparison": str(comparison.uuid)}], hit_type="multiturn_ab",
                       hit_options={"answers": "ab_tie", "strength": True})
        worker, = make_workers(1)
        _vote(batch, worker, {"turn1": "tie", "turn2": "A", "turn3": "B", "overall": "A",
                              "strength": "slightly"})
        stored = dict(Judgment.objects.values_list("turn", "choice"))
        assert stored == {"1": "tie", "2": "A", "3": "B", "overall": "A"}
        assert Judgment.objects.get(turn="overall").meta == {"strength": "slightly"}


class TestThePageShowsWhatTheBatchOffers:
    def _page(self, client, user, **options):
        comparison = _comparison()
        batch = _batch([{"comparison": str(comparison.uuid)}], **options)
        response = client.get(reverse("annotation:batch_next", args=[batch.uuid]), follow=True)
        assert response.status_code == 200
        return response.content.decode()

    def test_forced_choice_shows_no_tie(self, alice_client, alice):
        html = self._page(alice_client, alice)
        assert 'value="tie"' not in html and 'value="bad"' not in html
        assert 'name="strength"' not in html

    def test_ties_both_bad_and_strength_are_offered_with_keys(self, alice_client, alice):
        html = self._page(alice_client, alice,
                          hit_options={"answers": "ab_tie_bad", "strength": True})
        assert 'id="choice-tie"' in html and 'id="choice-bad"' in html
        assert 'data-key="3 t"' in html and 'data-key="4"' in html
        assert 'id="strength-much"' in html and 'id="strength-slightly"' in html

    def test_identical_responses_are_pointed_out(self, alice_client, alice):
        inst = builders.instance()
        ms = builders.models("LLaVA", "BLIP")
        same = "The house is red with a yellow door."
        comparison = Comparison.objects.create(
            instance=inst, response_a=builders.respond(inst, ms["LLaVA"], text=same),
            response_b=builders.respond(inst, ms["BLIP"], text=same))
        batch = _batch([{"comparison": str(comparison.uuid)}])
        html = alice_client.get(reverse("annotation:batch_next", args=[batch.uuid]),
                                follow=True).content.decode()
        assert 'id="identical-note"' in html and "report a problem" in html


class TestReportingAProblem:
    def _leased(self, user, n=2):
        batch = _batch([{"comparison": str(_comparison().uuid)}], n=n)
        return task_claim_next(batch=batch, worker=worker_for_user(user))

    def test_a_report_is_kept_the_slot_reopens_and_no_vote_counts(self, alice_client, alice,
                                                                  admin_client):
        assignment = self._leased(alice)
        task = assignment.task
        response = alice_client.post(
            reverse("annotation:assignment_problem", args=[assignment.uuid]),
            {"category": "identical", "note": "<b>same</b> text twice"})
        assert response.status_code == 302
        problem = TaskProblem.objects.get()
        assert (problem.category, problem.note, problem.task_id) == (
            "identical", "<b>same</b> text twice", task.pk)
        assignment.refresh_from_db()
        assert assignment.status == Assignment.Status.RETURNED
        assert Task.objects.get(pk=task.pk).slots_taken == 0
        assert not Judgment.objects.exists()
        assert task_claim_next(batch=task.batch, worker=worker_for_user(alice)) is None
        page = admin_client.get(reverse("admin:annotation_marketplacebatch_review",
                                        args=[task.batch_id])).content.decode()
        assert "The responses are identical" in page
        assert "&lt;b&gt;same&lt;/b&gt; text twice" in page and "<b>same</b>" not in page

    def test_a_bad_report_writes_nothing(self, alice_client, alice):
        assignment = self._leased(alice)
        url = reverse("annotation:assignment_problem", args=[assignment.uuid])
        for data in ({"category": "nonsense"}, {"category": "other", "note": "x" * 1001},
                     {"category": "other", "note": "nul\x00byte"}):
            assert alice_client.post(url, data).status_code == 400
        assert not TaskProblem.objects.exists()
        assignment.refresh_from_db()
        assert assignment.status == Assignment.Status.LEASED

    def test_no_one_reports_on_someone_elses_task(self, bob_client, alice):
        assignment = self._leased(alice)
        response = bob_client.post(
            reverse("annotation:assignment_problem", args=[assignment.uuid]),
            {"category": "other"})
        assert response.status_code == 404
        assert not TaskProblem.objects.exists()

    def test_a_submitted_task_cannot_be_reported(self, alice_client, alice):
        assignment = self._leased(alice)
        assignment_submit(assignment=assignment, data={"choice": "A"},
                          now=assignment.claimed_at + timedelta(seconds=30))
        alice_client.post(reverse("annotation:assignment_problem", args=[assignment.uuid]),
                          {"category": "other"})
        assert not TaskProblem.objects.exists()
        assert Judgment.objects.count() == 1


class TestMinimumTimeDefaultsFromTheHitType:
    def test_a_batch_without_a_minimum_gets_its_types_share(self, settings):
        settings.MIN_SECONDS_SHARE = 0.2
        batch = batch_create_from_rows(hit_type="pairwise_ab", title="t",
                                       rows=[{"comparison": str(_comparison().uuid)}])
        assert batch.min_seconds == round(get_hit_type("pairwise_ab").expected_seconds * 0.2) > 0
        kept = batch_create_from_rows(hit_type="pairwise_ab", title="t", min_seconds=0,
                                      rows=[{"comparison": str(_comparison().uuid)}])
        assert kept.min_seconds == 0

    def test_the_api_uses_the_default_and_says_it(self, admin_client):
        rows = [{"comparison": str(_comparison().uuid)}]
        created = admin_client.post("/api/batches/", {"hit_type": "pairwise_ab", "title": "t",
                                                      "rows": rows},
                                    content_type="application/json")
        assert created.status_code == 201, created.content
        assert created.json()["min_seconds"] == get_hit_type("pairwise_ab").default_min_seconds()
        assert created.json()["hit_options"] == {"answers": "ab", "strength": False}
        tie = admin_client.post("/api/batches/", {
            "hit_type": "pairwise_ab", "title": "t", "rows": rows,
            "hit_options": {"answers": "ab_tie"}}, content_type="application/json")
        assert tie.json()["hit_options"]["answers"] == "ab_tie"

    def test_an_upload_that_sets_zero_is_told(self, admin_client):
        from django.core.files.uploadedfile import SimpleUploadedFile

        rows = f"comparison\n{_comparison().uuid}\n".encode()
        response = admin_client.post(reverse("admin:annotation_batch_upload"), {
            "hit_type": "pairwise_ab", "title": "zero", "provider": "local",
            "assignments_per_task": 1, "reward": "0.10", "lease_seconds": 1800,
            "min_seconds": 0, "file": SimpleUploadedFile("rows.csv", rows)}, follow=True)
        assert Batch.objects.get(title="zero").min_seconds == 0
        assert "answers of any speed are accepted" in response.content.decode()
