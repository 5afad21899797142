"""Imports go one way, read from the source with ``ast`` (every import, at the top or inside a
function: a late import is still a dependency).

Between apps: ``studies`` ← ``annotation`` ← ``judging`` ← ``agreement`` (``studies`` imports
none of them; ``config`` and the test suite sit above all).

Inside ``annotation``, the rooms, lowest first:

1. ``core``: plumbing that knows no domain model (statements' rules, jobs, money, HTTP);
2. ``models``: the app's tables, every room's (``annotation/models/``, ``providers/models.py``,
   ``webhooks/models.py``, and the validator a migration names): Django loads one app's models
   together, so they are one layer;
3. ``webhooks``: signed outgoing events, which the engine emits;
4. ``engine``: batches, tasks, claims, submissions, the HIT type registry;
5. ``content``, ``people``: benchmark content and accounts, built on the engine;
6. ``pipeline`` (builds datasets with HIT types) and ``providers`` (the marketplaces: the
   engine asks their registry, ``annotation.core.marketplaces``, never imports them);
7. the entry points: ``console``, ``management``, ``templatetags`` and the app's top-level
   modules (``admin``, ``urls``, ``api_urls``, ``apps``).

Each marketplace is a subpackage of ``providers`` (``providers/<name>/`` with a ``provider``
module): neither the engine's rooms nor ``annotation/urls.py`` import one (they ask the
registry), and marketplaces never import each other.

A room may import its own modules and any lower room. No import circle between modules either,
except a Celery ``tasks`` module and the ``services`` it calls (the task queues itself after the
service's commit), and an app's models modules (Django's one ``models`` module per app).
"""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
APPS = ("studies", "annotation", "judging", "agreement")
ROOMS = {"core": 1, "models": 2, "webhooks": 3, "engine": 4, "content": 5, "people": 5,
         "pipeline": 6, "providers": 6, "console": 7, "management": 7, "templatetags": 7}
TOP_LEVEL = 7  # annotation/admin.py, urls.py, api_urls.py, apps.py
# In the models layer though not named so: migration 0015 names this validator by its path.
MODELS_TOO = {"annotation.providers.prolific.audience"}


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, module: str) -> list[tuple[str, int]]:
    """(imported module, line) for every import in the file, relative ones resolved; ``from
    package import name`` counts as importing ``package.name``."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            found += [(f"{base}.{alias.name}", node.lineno) for alias in node.names]
    return found


def _sources() -> dict[str, Path]:
    return {_module(p): p for app in APPS for p in (ROOT / app).rglob("*.py")
            if "migrations" not in p.parts}


SOURCES = _sources()


def _known(name: str) -> str | None:
    """The project module an imported name lives in (``pkg.mod.func`` → ``pkg.mod``)."""
    while name and name not in SOURCES:
        name = name.rpartition(".")[0]
    return name or None


def _room(module: str) -> tuple[str, int] | None:
    """(room, level) of an ``annotation`` module; None outside the app."""
    parts = module.split(".")
    if parts[0] != "annotation":
        return None
    if len(parts) == 1 or (len(parts) == 2 and parts[1] not in ROOMS):
        return "annotation", TOP_LEVEL
    if parts[1] == "models" or parts[-1] == "models" or module in MODELS_TOO:
        return "models", ROOMS["models"]
    return parts[1], ROOMS[parts[1]]


def _edges(sources: dict[str, Path]):
    for module, path in sources.items():
        for name, line in _imports(path, module):
            target = _known(name)
            if target and target != module:
                yield module, target, f"{path.name}:{line} ({module}) imports {target}"


EDGES = list(_edges(SOURCES))


def _upward_rooms(edges) -> list[str]:
    upward = []
    for src, dst, where in edges:
        a, b = _room(src), _room(dst)
        if a and b and a[0] != b[0] and b[1] >= a[1]:
            upward.append(where)
    return upward


def test_apps_import_only_apps_below_them():
    level = {app: i for i, app in enumerate(APPS)}
    upward = [where for src, dst, where in EDGES
              if level[dst.split(".")[0]] > level[src.split(".")[0]]]
    assert upward == []


def test_annotation_rooms_import_only_their_own_or_lower_rooms():
    assert _upward_rooms(EDGES) == []


def test_every_room_is_placed():
    rooms = {p.name for p in (ROOT / "annotation").iterdir()
             if p.is_dir() and (p / "__init__.py").exists()}
    assert rooms - {"migrations"} <= set(ROOMS)


MARKETPLACES = frozenset(
    f"annotation.providers.{p.parent.name}"
    for p in (ROOT / "annotation" / "providers").glob("*/provider.py"))
REGISTRY_ASKERS = ("annotation.urls",)  # beside every room below ``providers``


def _marketplace(module: str) -> str | None:
    """The marketplace subpackage a module belongs to, if any."""
    return next((m for m in MARKETPLACES if module == m or module.startswith(m + ".")), None)


def _marketplace_imports(edges) -> list[str]:
    """Imports of a marketplace by a registry asker or by another marketplace."""
    wrong = []
    for src, dst, where in edges:
        target, own = _marketplace(dst), _marketplace(src)
        if target and target != own and (own or src in REGISTRY_ASKERS):
            wrong.append(where)
    return wrong


def test_the_marketplaces_are_subpackages():
    assert {"annotation.providers.local", "annotation.providers.mturk",
            "annotation.providers.prolific"} <= MARKETPLACES


def test_urls_and_marketplaces_import_no_other_marketplace():
    assert _marketplace_imports(EDGES) == []


@pytest.mark.parametrize("module, source, wrong", [
    ("annotation.urls", "from annotation.providers.mturk import views\n", True),
    ("annotation.urls", "from annotation.core.marketplaces import registered\n", False),
    ("annotation.providers.prolific.probe", "from annotation.providers.mturk.client import call\n",
     True),
    ("annotation.providers.prolific.probe", "from annotation.providers.prolific import pay\n",
     False),
    ("annotation.providers.prolific.probe", "from annotation.providers.services import x\n",
     False),
])
def test_the_marketplace_check_sees_a_named_marketplace(tmp_path, module, source, wrong):
    """Not vacuous: the URL module naming MTurk, or Prolific importing MTurk, is caught."""
    probe = tmp_path / "probe.py"
    probe.write_text(source)
    assert bool(_marketplace_imports(list(_edges({module: probe})))) is wrong


def _cycles(edges) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for src, dst, _ in edges:
        graph.setdefault(src, set()).add(dst)
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _allowed(component: list[str]) -> bool:
    """A Celery task module and the services it calls (and that queue it after commit); an
    app's models modules."""
    tasks_and_services = all(
        m.endswith(".tasks") or ".services" in m or m.endswith("services") for m in component
    ) and any(m.endswith(".tasks") for m in component)
    models = all(m.endswith("models") for m in component)
    return tasks_and_services or models


def test_no_import_circle_except_tasks_and_services():
    assert [c for c in _cycles(EDGES) if not _allowed(c)] == []


@pytest.mark.parametrize("source, upward", [
    ("from annotation.providers.base import get_provider\n", True),
    ("from annotation.core.marketplaces import get_provider\n", False),
])
def test_the_checks_see_an_upward_import_and_a_circle(tmp_path, source, upward):
    """Not vacuous: an engine module importing a marketplace is caught, and so is a circle."""
    probe = tmp_path / "probe.py"
    probe.write_text(source)
    edges = list(_edges({"annotation.engine.probe": probe}))
    assert bool(_upward_rooms(edges)) is upward
    circle = [("agreement.reports.params", "agreement.services.metric_scores", ""),
              ("agreement.services.metric_scores", "agreement.reports.params", "")]
    assert [c for c in _cycles(circle) if not _allowed(c)] == [
        ["agreement.reports.params", "agreement.services.metric_scores"]]

