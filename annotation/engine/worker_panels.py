"""Extra panels on the admin's page per worker, contributed by later apps.

The engine may not import ``judging`` or ``agreement``, yet the worker page should show what
they know about a worker (e.g. a reliability model's estimate over their votes). A later app
registers a callable here from its ``AppConfig.ready``; the page calls each one in order of
registration and renders what it returns, escaped, in its own section.

A panel is ``panel(worker) -> dict | None``: ``{"title": str, "rows": [(label, value), ...],
"note": str}`` (``note`` optional), or None when it has nothing to say about this worker.
"""
from collections.abc import Callable

Panel = Callable[[object], dict | None]

_PANELS: list[Panel] = []


def register(panel: Panel) -> Panel:
    """Add ``panel`` once (``ready`` may run twice in tests); returns it, to use as a
    decorator."""
    if panel not in _PANELS:
        _PANELS.append(panel)
    return panel


def panels_for(worker) -> list[dict]:
    """Each registered panel's section for ``worker``, skipping the ones with nothing to say."""
    return [section for panel in _PANELS if (section := panel(worker)) is not None]
