"""``Meanwhile`` reads in a thread of its own on PostgreSQL outside a transaction, and here
otherwise; either way ``result()`` is what reading here gives, and no thread outlives it."""
import threading

import pytest

from agreement.reports import meanwhile
from agreement.reports.meanwhile import Meanwhile
from annotation.models import Worker


def _read(calls):
    def read():
        calls.append(threading.current_thread().name)
        return sorted(Worker.objects.values_list("external_id", flat=True))
    return read


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_on_postgresql_it_reads_in_a_thread_that_sees_the_committed_rows():
    Worker.objects.create(external_id="w1")
    calls, before = [], threading.active_count()
    with Meanwhile(_read(calls)) as job:
        assert job.result() == ["w1"]
    assert calls == ["report read"] and threading.active_count() == before


@pytest.mark.django_db
def test_inside_a_transaction_it_reads_here_when_asked():
    Worker.objects.create(external_id="w1")  # not committed: a thread would not see it
    calls = []
    job = Meanwhile(_read(calls))
    assert calls == []
    assert job.result() == ["w1"] and calls == [threading.current_thread().name]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_dropped_or_failed_reads_are_done_again_here(caplog):
    Worker.objects.create(external_id="w1")
    calls = []
    job = Meanwhile(_read(calls))
    job.drop()
    Worker.objects.create(external_id="w2")
    assert job.result() == ["w1", "w2"]  # read again, after the drop
    assert calls == ["report read", threading.current_thread().name]

    attempts = []

    def fails_in_the_thread():
        attempts.append(threading.current_thread().name)
        if len(attempts) == 1:
            raise RuntimeError("connection lost")
        return "read here"

    with Meanwhile(fails_in_the_thread) as job:
        assert job.result() == "read here"
    assert attempts == ["report read", threading.current_thread().name]
    assert "connection lost" in caplog.text


def test_leaving_the_block_joins_the_thread(monkeypatch):
    monkeypatch.setattr(meanwhile, "connection", type("Pg", (), {
        "vendor": "postgresql", "in_atomic_block": False})())
    opened, before = threading.Event(), threading.active_count()
    with Meanwhile(lambda: opened.wait(30)):
        assert threading.active_count() == before + 1
        opened.set()
    assert threading.active_count() == before
