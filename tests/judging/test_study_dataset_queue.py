"""A study dataset's export and import hold a slot of the job cap while they run (they run in
their caller's process and have no row: ``annotation.core.jobs.occupying``): an export into a
directory another process is exporting into is refused, every running one counts against the
global cap for reports and runs too, and a process that dies leaves no slot behind."""
import threading

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, connections
from django.test import override_settings

from agreement.services.reports import report_start
from annotation.core.jobs import JobsBusy, occupying
from judging.dataset.export import dataset_export
from judging.dataset.imports import dataset_import

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


class Holder(threading.Thread):
    """Another process's connection holding ``occupying(kind, fingerprint)`` until ``release``;
    ``die`` closes its connection without letting go (what a killed process does)."""

    def __init__(self, kind, fingerprint):
        super().__init__(daemon=True)
        self.kind, self.fingerprint = kind, fingerprint
        self.holding, self.release, self.die = threading.Event(), threading.Event(), False

    def run(self):
        try:
            if self.die:
                from annotation.core.jobs import _HELD, _held_key
                from annotation.core.sql import try_session_lock

                try_session_lock(_HELD, _held_key(self.kind, self.fingerprint))
                self.holding.set()
                self.release.wait(30)
                connection.close()  # the session ends, the lock with it
                return
            with occupying(self.kind, fingerprint=self.fingerprint):
                self.holding.set()
                self.release.wait(30)
        finally:
            connections.close_all()


def _holding(kind, fingerprint, *, die=False) -> Holder:
    holder = Holder(kind, fingerprint)
    holder.die = die
    holder.start()
    assert holder.holding.wait(10)
    return holder


@override_settings(JOBS_MAX_GLOBAL=2)
def test_an_export_into_a_directory_being_exported_into_is_refused(tmp_path):
    out = tmp_path / "dataset"
    holder = _holding("dataset_export", str(out.resolve()))
    with pytest.raises(JobsBusy, match="the same dataset export is already running"):
        dataset_export(out)
    assert not out.exists()  # nothing written
    with pytest.raises(CommandError, match="already running"):
        call_command("export_study_dataset", "--out", str(out))
    holder.release.set()
    holder.join(10)
    assert dataset_export(out)["judgments"] == 0 and (out / "README.md").is_file()


@override_settings(JOBS_MAX_GLOBAL=2, JOBS_MAX_PER_USER=2)
def test_running_exports_and_imports_count_against_the_global_cap(tmp_path):
    holders = [_holding("dataset_export", "elsewhere"), _holding("dataset_import", "a folder")]
    with pytest.raises(JobsBusy, match="the server is busy with 2 jobs"):
        report_start({"metrics": ["length"], "bootstrap_rounds": 10}, created_by="ann")
    with pytest.raises(JobsBusy, match="the server is busy with 2 jobs"):
        dataset_import(tmp_path)
    for holder in holders:
        holder.release.set()
        holder.join(10)
    with pytest.raises(Exception, match="missing"):  # admitted now: the empty folder is refused
        dataset_import(tmp_path)


@override_settings(JOBS_MAX_GLOBAL=1)
def test_a_process_that_dies_leaves_no_slot_behind(tmp_path):
    holder = _holding("dataset_export", "x", die=True)
    with pytest.raises(JobsBusy):
        dataset_export(tmp_path / "a")
    holder.release.set()
    holder.join(10)
    assert dataset_export(tmp_path / "a")["judgments"] == 0
