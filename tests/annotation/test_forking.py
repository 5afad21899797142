"""A lane process forked inside ``without_broker_cleanup_after_fork`` runs none of kombu's
after-fork hooks (one of them blocked a forked judge lane forever in a full ``make test``),
and the parent keeps them for every later fork."""
import multiprocessing
import multiprocessing.util
from pathlib import Path

from annotation.core.forking import without_broker_cleanup_after_fork


class _Resource:
    """Stands for a kombu connection pool: its after-fork hook leaves a mark in the child."""

    def __init__(self, mark: Path):
        self.mark = mark


def _hook(resource: _Resource) -> None:
    resource.mark.write_text("hook ran")


_hook.__module__ = "kombu.resource"  # what the registry filter reads, as for kombu's own


def _child() -> None:
    pass


def _fork_once() -> None:
    child = multiprocessing.get_context("fork").Process(target=_child)
    child.start()
    child.join(30)
    assert child.exitcode == 0


def test_kombus_after_fork_hooks_are_left_out_of_the_child_and_kept_here(tmp_path):
    resource = _Resource(tmp_path / "mark")
    multiprocessing.util.register_after_fork(resource, _hook)
    with without_broker_cleanup_after_fork():
        _fork_once()
    assert not resource.mark.exists()  # the child ran no kombu hook
    _fork_once()
    assert resource.mark.read_text() == "hook ran"  # the parent's registry is whole again
