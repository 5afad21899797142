"""The batch rule that blocks workers by estimated reliability: a simulated crowd of four good
workers and two planted spammers (one answering at random, one always "A"), voted through the
engine; the spammers' Dawid–Skene accuracy is below the threshold even at its upper bound, the
good workers' is far above it."""
import pytest
from django.core.management import CommandError, call_command

from agreement.services.worker_reliability import block_unreliable_workers
from agreement.statistics.crowd_simulation import simulate_crowd
from agreement.tasks import block_unreliable
from annotation.models import Batch, Worker
from tests.factories import make_workers
from tests.judging import builders

pytestmark = pytest.mark.django_db(transaction=True)  # blocks reach marketplaces: no transaction
N_ITEMS = 60


def _crowd_batch(threshold=0.7):
    crowd = simulate_crowd(N_ITEMS, votes_per_item=6, n_workers=6, spammer_share=2 / 6,
                           labels=("A", "B"), truth_shares=(0.5, 0.5), seed=0)
    names = sorted(crowd.confusion)
    by_item = {}
    for item, name, label in crowd.votes:
        by_item.setdefault(item, {})[name] = label
    models = builders.models("M1", "M2")
    plan = [(builders.comparison(models["M1"], models["M2"]), [votes[n] for n in names])
            for _, votes in sorted(by_item.items())]
    workers = dict(zip(names, make_workers(len(names)), strict=True))
    batch = builders.crowd_batch(plan, list(workers.values()), min_seconds=0)
    Batch.objects.filter(pk=batch.pk).update(auto_block_reliability_below=threshold)
    batch.refresh_from_db()
    spammers = {workers[n].pk for n in crowd.spammers}
    return batch, spammers, {w.pk for w in workers.values()} - spammers


def _blocked() -> set[int]:
    return set(Worker.objects.filter(blocked=True).values_list("pk", flat=True))


def test_the_planted_spammers_are_blocked_and_the_good_workers_are_not():
    batch, spammers, good = _crowd_batch()
    picked = block_unreliable_workers(batch)
    assert {u.worker.pk for u in picked} == spammers and all(u.blocked for u in picked)
    assert _blocked() == spammers
    for u in picked:
        assert u.estimate.n_votes == N_ITEMS and u.estimate.ci[1] < 0.7
        reason = Worker.objects.get(pk=u.worker.pk).blocked_reason
        assert reason.startswith("Estimated accuracy ") and "Dawid–Skene, 60 votes" in reason
        assert "below 70% (batch crowd)" in reason
    # a rerun finds them again and leaves them as they are
    again = block_unreliable_workers(batch)
    assert {u.worker.pk for u in again} == spammers and not any(u.blocked for u in again)
    assert good.isdisjoint(_blocked())


def test_dry_run_changes_nothing_and_says_what_it_would_do():
    batch, spammers, _ = _crowd_batch()
    assert {u.worker.pk for u in block_unreliable_workers(batch, dry_run=True)} == spammers
    assert _blocked() == set()
    out = _call("--batch", str(batch.uuid), "--dry-run")
    assert out.count("would block: ") == 2 and "(dry run: nothing changed)" in out
    assert _blocked() == set()
    out = _call("--batch", str(batch.uuid))
    assert out.count("blocked: ") == 2 and "2 worker(s) below 70% in batch crowd" in out
    assert _blocked() == spammers


def test_too_few_votes_block_nobody(settings):
    batch, _, _ = _crowd_batch()
    settings.AUTO_BLOCK_RELIABILITY_MIN_VOTES = N_ITEMS + 1
    assert block_unreliable_workers(batch) == [] and _blocked() == set()


def test_the_celery_task_applies_the_rule():
    batch, spammers, _ = _crowd_batch()
    assert block_unreliable(batch.pk) == 2 and _blocked() == spammers


def test_bad_input_is_a_clear_error_and_blocks_nobody():
    batch, _, _ = _crowd_batch(threshold=None)
    with pytest.raises(CommandError, match="no auto_block_reliability_below"):
        _call("--batch", str(batch.uuid))
    for bad in ("not-a-uuid", "00000000-0000-0000-0000-000000000000"):
        with pytest.raises(CommandError, match="no batch with UUID"):
            _call("--batch", bad)
    assert _blocked() == set()


def _call(*args) -> str:
    import io

    out = io.StringIO()
    call_command("block_unreliable", *args, stdout=out)
    return out.getvalue()
