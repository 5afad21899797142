"""What the judge layer tells the features built on it, without importing them.

A run ends once: finished (every unit done or failed) or stopped before that (its budget
reached, cancelled). The lane or request that ended it calls ``run_ended`` after the status
change committed; subscribers (submissions, at app-ready) register with ``on_run_ended``.
A subscriber's exception propagates to the caller, as a direct call's would.
"""
from __future__ import annotations

from typing import Protocol


class RunEnded(Protocol):
    def __call__(self, run, *, finished: bool, why: str) -> None:
        """``finished``: the run is done; else it stopped and ``why`` says why."""


_RUN_ENDED: list[RunEnded] = []


def on_run_ended(subscriber: RunEnded) -> RunEnded:
    """Subscribe (once: subscribing the same function again changes nothing)."""
    if subscriber not in _RUN_ENDED:
        _RUN_ENDED.append(subscriber)
    return subscriber


def run_ended(run, *, finished: bool, why: str = "") -> None:
    for subscriber in list(_RUN_ENDED):
        subscriber(run, finished=finished, why=why)
