"""The disagreement review through its pages: which items are listed, an adjudication stored as
a separate labelled judgment that no vote reader counts, and more votes from new workers only."""
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agreement.selectors import pairwise_data
from annotation.engine.services.batches import batch_set_status
from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.more_votes import task_add_assignments
from annotation.engine.services.submissions import assignment_submit
from annotation.engine.services.workers import worker_for_user
from annotation.models import Batch, Task
from judging import review
from judging.models import Comparison, Judgment
from judging.selectors import (
    comparison_majorities,
    judge_names,
    leaderboard_sources,
    pairwise_judgments,
)
from judging.services.comparisons import comparison_batch_create
from judging.services.judgments.record import judgment_record
from tests.factories import make_workers, publish_on_mturk
from tests.judging import builders

pytestmark = pytest.mark.django_db
JUDGE = "gpt-judge"


def _comparison(instruction, a="LLaVA", b="BLIP", text_a=None):
    inst = builders.instance(instruction=instruction)
    ms = builders.models(a, b)
    return Comparison.objects.create(instance=inst, response_a=builders.respond(inst, ms[a], text_a),
                                     response_b=builders.respond(inst, ms[b]))


def _vote(batch, workers, plan):
    """Each worker votes on every task it can claim; ``plan``: comparison uuid -> one choice
    per worker ("AAABB")."""
    for i, worker in enumerate(workers):
        while (a := task_claim_next(batch=batch, worker=worker)) is not None:
            assignment_submit(assignment=a, data={"choice": plan[a.task.payload["comparison"]][i]},
                              now=a.claimed_at + timedelta(seconds=30))


def _judge(comparison, choice):
    judgment_record(source=JUDGE, annotator=f"{JUDGE}@1", comparison=comparison, choice=choice,
                    template_version="pairwise@v1")


@pytest.fixture
def items():
    split = _comparison("Split item", text_a="<script>alert('a')</script> & <b>bold</b>")
    unanimous = _comparison("Unanimous item")
    disputed = _comparison("Judge disagrees item")
    agreed = _comparison("Four to one, judge agrees")
    other_pair = _comparison("Other pair split", a="Qwen")
    comps = [split, unanimous, disputed, agreed, other_pair]
    batch = comparison_batch_create(comparisons=comps, title="Votes", judgments_per_comparison=5)
    batch_set_status(batch, Batch.Status.ACTIVE)
    workers = make_workers(5)
    _vote(batch, workers, {str(split.uuid): "AAABB", str(unanimous.uuid): "AAAAA",
                           str(disputed.uuid): "AAAAB", str(agreed.uuid): "BBBBA",
                           str(other_pair.uuid): "ABABB"})
    _judge(unanimous, "A")
    _judge(disputed, "B")
    _judge(agreed, "B")
    return {"split": split, "unanimous": unanimous, "disputed": disputed, "agreed": agreed,
            "other_pair": other_pair, "batch": batch, "workers": workers}


def _listed(**filters):
    return {r.comparison_id for r in review.review_listing(**filters).rows}


def test_listing_finds_splits_and_judge_disagreements_and_not_agreed_items(items, analyst_client):
    ids = {k: v.pk for k, v in items.items() if isinstance(v, Comparison)}
    assert _listed() == {ids["split"], ids["disputed"], ids["other_pair"]}
    assert _listed(kind=review.SPLIT) == {ids["split"], ids["other_pair"]}
    assert _listed(kind=review.JUDGES) == {ids["disputed"]}
    assert _listed(judge=JUDGE) == {ids["disputed"]}  # only items the judge gave a verdict on
    pair = review.pair_value([items["other_pair"].response_a.model_id,
                              items["other_pair"].response_b.model_id])
    assert _listed(pair=pair) == {ids["other_pair"]}
    page = analyst_client.get("/review/").content.decode()
    assert "Split item" in page and "Judge disagrees item" in page and "3 / 2 / 0" in page
    assert "Unanimous item" not in page and "Four to one" not in page
    assert "gpt-judge says B" in page and "Qwen vs BLIP" in page
    only_pair = analyst_client.get("/review/", {"pair": pair}).content.decode()
    assert "Other pair split" in only_pair and "Split item" not in only_pair


def test_bad_filters_are_a_400_and_pages_split_the_list(items, analyst_client, monkeypatch):
    assert analyst_client.get("/review/", {"kind": "everything"}).status_code == 400
    assert analyst_client.get("/review/", {"pair": "1-x"}).status_code == 400
    assert analyst_client.get("/review/", {"judge": "a\x00b"}).status_code == 400
    monkeypatch.setattr("agreement.review.views.PER_PAGE", 2)
    first = analyst_client.get("/review/").content.decode()
    second = analyst_client.get("/review/", {"page": 2}).content.decode()
    assert "Page 1 of 2" in first and "Page 2 of 2" in second
    assert first.count("/?turn=") == 2 and second.count("/?turn=") == 1  # item links


def test_the_item_shows_every_vote_escaped(items, analyst_client):
    split = items["split"]
    page = analyst_client.get(f"/review/{split.uuid}/", {"turn": ""}).content.decode()
    assert "&lt;script&gt;alert(&#x27;a&#x27;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in page
    assert "<script>alert" not in page and "<b>bold" not in page
    for worker in items["workers"]:
        assert str(worker) in page  # marketplace-less local workers without a user: their id
    assert "Majority: <strong>A</strong> · A 3 / B 2 / tie 0" in page
    assert analyst_client.get(f"/review/{split.uuid}/", {"turn": "9"}).status_code == 400


def _adjudicate(client, comparison, choice, note=""):
    return client.post(f"/review/{comparison.uuid}/adjudicate/",
                       {"turn": "", "choice": choice, "note": note})


def test_adjudication_is_a_separate_labelled_row_counted_nowhere(items, analyst_client, analyst):
    split = items["split"]
    votes = list(Judgment.objects.order_by("pk").values_list("pk", "source", "choice"))
    before = (pairwise_judgments(), comparison_majorities(), judge_names(), leaderboard_sources(),
              pairwise_data().votes)
    response = _adjudicate(analyst_client, split, "B", "<i>looked</i> closely")
    assert response.status_code == 302
    ruling = Judgment.objects.get(kind=Judgment.Kind.ADJUDICATION)
    assert (ruling.source, ruling.annotator, ruling.choice, ruling.comparison, ruling.feedback) \
        == (Judgment.ADJUDICATION, analyst.username, "B", split, "<i>looked</i> closely")
    assert ruling.meta == {"human_votes": {"A": 3, "B": 2, "tie": 0, "bad": 0}, "human_majority": "A"}
    assert list(Judgment.objects.exclude(pk=ruling.pk).order_by("pk")
                .values_list("pk", "source", "choice")) == votes
    after = (pairwise_judgments(), comparison_majorities(), judge_names(), leaderboard_sources(),
             pairwise_data().votes)
    assert after == before and Judgment.ADJUDICATION not in judge_names()
    assert split.pk not in _listed() and split.pk in _listed(state=review.ADJUDICATED)
    page = analyst_client.get(f"/review/{split.uuid}/", {"turn": ""}).content.decode()
    assert "&lt;i&gt;looked&lt;/i&gt; closely" in page and "current" in page


def test_a_ruling_is_not_a_judges_verdict_in_the_review(items, analyst_client):
    """Overruling the unanimous item (AAAAA, the judge says A) with B: the ruling is shown as
    the item's ruling, never as a judge called "adjudication" nor as a judge disagreement."""
    unanimous, disputed = items["unanimous"], items["disputed"]
    assert _adjudicate(analyst_client, unanimous, "B", "overruled").status_code == 302
    listing = review.review_listing(state=review.ALL)
    assert listing.judges == [JUDGE]
    assert {r.comparison_id for r in listing.rows} == {
        items["split"].pk, disputed.pk, items["other_pair"].pk}
    assert _listed(kind=review.JUDGES, state=review.ALL) == {disputed.pk}
    assert _listed(judge=Judgment.ADJUDICATION, state=review.ALL) == set()
    shown = review.review_item(unanimous, "")
    assert [(j["judge"], j["choice"]) for j in shown["judges"]] == [(JUDGE, "A")]
    assert [r.choice for r in shown["rulings"]] == ["B"]
    page = analyst_client.get("/review/", {"state": "all"}).content.decode()
    assert "adjudication says" not in page and "Unanimous item" not in page


def test_adjudicating_again_supersedes_and_keeps_the_earlier_ruling(items, analyst_client):
    split = items["split"]
    _adjudicate(analyst_client, split, "B")
    _adjudicate(analyst_client, split, "tie", "on second thought")
    rulings = Judgment.objects.filter(kind=Judgment.Kind.ADJUDICATION)
    assert sorted(rulings.values_list("choice", flat=True)) == ["B", "tie"]
    current, = [r for r in review.review_listing(state=review.ALL).rows
                if r.comparison_id == split.pk]
    assert current.ruling.choice == "tie"
    page = analyst_client.get(f"/review/{split.uuid}/", {"turn": ""}).content.decode()
    assert page.index("on second thought") < page.index("superseded")


def test_bad_rulings_write_nothing(items, analyst_client):
    split = items["split"]
    for data in ({"turn": "", "choice": "C"}, {"turn": "7", "choice": "A"},
                 {"turn": "", "choice": "A", "note": "x" * 2001}):
        response = analyst_client.post(f"/review/{split.uuid}/adjudicate/", data, follow=True)
        assert "Not adjudicated" in response.content.decode()
    unvoted = _comparison("Never voted")
    response = _adjudicate(analyst_client, unvoted, "A")
    assert not Judgment.objects.filter(kind=Judgment.Kind.ADJUDICATION).exists()
    assert response.status_code == 302


def test_adjudication_is_refused_to_non_analysts(items, alice_client, client):
    split = items["split"]
    assert _adjudicate(alice_client, split, "A").status_code == 403
    assert _adjudicate(client, split, "A").headers["Location"].startswith("/accounts/login/")
    assert alice_client.get("/review/").status_code == 403
    assert not Judgment.objects.filter(kind=Judgment.Kind.ADJUDICATION).exists()


def test_the_database_keeps_the_name_for_adjudications(items):
    """Whatever writes the row: a verdict cannot pass for a ruling, nor a ruling for a verdict."""
    assert Judgment.is_reserved_name(" Adjudication ") and Judgment.is_reserved_name("HUMAN")
    assert not Judgment.is_reserved_name("gpt-judge")
    for source, kind in ((Judgment.ADJUDICATION, Judgment.Kind.PAIRWISE),
                         (JUDGE, Judgment.Kind.ADJUDICATION)):
        with pytest.raises(IntegrityError), transaction.atomic():
            Judgment.objects.create(source=source, kind=kind, annotator="x", choice="A",
                                    comparison=items["split"], created_at=timezone.now())


def test_more_votes_come_from_new_workers_only(items, analyst_client, alice):
    batch, split = items["batch"], items["split"]
    batch_set_status(batch, Batch.Status.FINISHED)
    response = analyst_client.post(f"/review/{split.uuid}/more-votes/", {"turn": "", "extra": 2},
                                   follow=True)
    assert "now takes 7 votes; the batch is active" in response.content.decode()
    task = Task.objects.get(batch=batch, payload__comparison=str(split.uuid))
    assert task.max_assignments == 7
    assert set(Task.objects.exclude(pk=task.pk).values_list("max_assignments", flat=True)) == {5}
    batch.refresh_from_db()
    assert batch.status == Batch.Status.ACTIVE
    for worker in items["workers"]:  # those who voted never get it again
        assert task_claim_next(batch=batch, worker=worker) is None
    newcomers = [*make_workers(2), worker_for_user(alice)]
    _vote(batch, newcomers[:2], {str(split.uuid): "BB"})
    assert task_claim_next(batch=batch, worker=newcomers[2]) is None  # its 7 slots are taken
    assert Judgment.objects.filter(comparison=split, source=Judgment.HUMAN).count() == 7
    assert set(Judgment.objects.filter(comparison=split).values_list("worker", flat=True)) \
        == {w.pk for w in [*items["workers"], *newcomers[:2]]}
    row, = [r for r in review.review_listing(kind=review.SPLIT).rows if r.comparison_id == split.pk]
    assert row.counts == {"A": 3, "B": 4, "tie": 0, "bad": 0}


def test_more_votes_are_refused_where_they_cannot_be_collected(items, analyst_client):
    batch = items["batch"]
    task = batch.tasks.first()
    for extra in (0, 21, True):
        with pytest.raises(ValidationError):
            task_add_assignments(task, extra)
    publish_on_mturk(batch)
    response = analyst_client.post(f"/review/{items['split'].uuid}/more-votes/",
                                   {"turn": "", "extra": 2}, follow=True)
    assert "extra assignments must be bought there" in response.content.decode()
    imported = _comparison("Imported votes")
    judgment_record(source=Judgment.HUMAN, annotator="w", comparison=imported, choice="A")
    response = analyst_client.post(f"/review/{imported.uuid}/more-votes/",
                                   {"turn": "", "extra": 2}, follow=True)
    assert "were imported" in response.content.decode()
    assert set(Task.objects.values_list("max_assignments", flat=True)) == {5}


def test_the_list_page_takes_the_same_queries_however_many_items(items, analyst_client):
    def queries():
        with CaptureQueriesContext(connection) as ctx:
            assert analyst_client.get("/review/", {"state": "all"}).status_code == 200
        return len(ctx)

    few = queries()
    more = [_comparison(f"More {i}") for i in range(4)]
    batch = comparison_batch_create(comparisons=more, title="More", judgments_per_comparison=3)
    batch_set_status(batch, Batch.Status.ACTIVE)
    _vote(batch, make_workers(3), {str(c.uuid): "ABA" for c in more})
    _adjudicate(analyst_client, more[0], "A")
    assert len(review.review_listing(state=review.ALL).rows) == 3 + 4
    assert queries() == few
