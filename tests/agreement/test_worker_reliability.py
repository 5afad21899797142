"""Each worker's Dawid–Skene estimate on the admin's worker page: fitted over the votes of the
batches they voted in (through the engine's panel registry, since the engine cannot import
agreement), lower for a worker who contradicts the others, bounded by
WORKER_RELIABILITY_MAX_VOTES."""
import html
import re

import pytest
from django.urls import reverse

from agreement.services.worker_reliability import LABELS
from agreement.statistics.worker_models import fit_worker_model
from tests.factories import make_workers
from tests.judging import builders

pytestmark = pytest.mark.django_db
TITLE = "Estimated reliability (Dawid–Skene)"


def _crowd(n_items=12):
    """Four workers who give the truth (A on even items, B on odd ones) but for one slip each,
    and a fifth who always says the opposite; returns (batch, workers, votes as fitted)."""
    models = builders.models("M1", "M2")
    comparisons = [builders.comparison(models["M1"], models["M2"]) for _ in range(n_items)]
    plan = []
    for i, c in enumerate(comparisons):
        truth, wrong = ("A", "B") if i % 2 == 0 else ("B", "A")
        good = [wrong if i == k else truth for k in range(4)]  # worker k slips on item k
        plan.append((c, [*good, wrong]))
    workers = make_workers(5)
    batch = builders.crowd_batch(plan, workers, min_seconds=0)
    votes = [((c.pk, ""), w.pk, v) for c, vs in plan for w, v in zip(workers, vs, strict=True)]
    return batch, workers, votes


def _panel(client, worker) -> str | None:
    page = client.get(reverse("admin:annotation_worker_overview", args=[worker.pk]))
    assert page.status_code == 200
    text = page.content.decode()
    start = text.find(f"<h2>{html.escape(TITLE)}</h2>")
    if start < 0:
        return None
    return html.unescape(text[start:text.find("<h2>", start + 1)])


def _accuracy(panel: str) -> tuple[int, int, int]:
    found = re.search(r"Estimated accuracy</th><td>(\d+) % \(95 % interval (\d+) %–(\d+) %\)",
                      panel)
    assert found, panel
    return tuple(int(x) for x in found.groups())


def test_the_page_shows_each_workers_estimate_and_the_contrarian_is_lower(admin_client_):
    _, workers, votes = _crowd()
    fit = fit_worker_model(votes, "dawid-skene", labels=LABELS)
    shown = {}
    for w in workers:
        panel = _panel(admin_client_, w)
        assert panel is not None
        shown[w.pk] = _accuracy(panel)
        want = fit.worker(w.pk)
        assert shown[w.pk] == (round(100 * want.accuracy), round(100 * want.ci[0]),
                               round(100 * want.ci[1]))
        assert "Their votes</th><td>12<" in panel
        assert "60 votes by 5 workers in 1 of 1 batch they voted in" in panel
    contrarian = workers[4].pk
    assert all(shown[contrarian][0] < shown[w.pk][0] for w in workers[:4])
    assert shown[contrarian][2] < 50 < min(shown[w.pk][1] for w in workers[:4])


def test_no_panel_for_a_worker_without_pairwise_votes(admin_client_):
    _crowd(4)
    assert _panel(admin_client_, make_workers(1)[0]) is None


def test_the_fit_keeps_the_newest_batches_within_the_bound(admin_client_, settings):
    _, workers, _ = _crowd(4)  # 20 votes
    newer = builders.crowd_batch(
        [(builders.comparison(*builders.models("M1", "M2").values()), ["A", "A", "B"])],
        workers[:3], min_seconds=0)  # 3 votes, newer
    assert newer.pk
    settings.WORKER_RELIABILITY_MAX_VOTES = 10
    panel = _panel(admin_client_, workers[0])
    assert "3 votes by 3 workers in 1 of 2 batches they voted in" in panel
    assert "Their votes</th><td>1<" in panel
    settings.WORKER_RELIABILITY_MAX_VOTES = 2  # even the newest batch is too big
    panel = _panel(admin_client_, workers[0])
    assert "not fitted" in panel and "WORKER_RELIABILITY_MAX_VOTES" in panel
