"""The migration state of the database, per app: the latest applied migration names.

"Latest" means applied migrations that no other applied migration of the same app depends on
(normally one name; two after an unmerged branch). When ``django_migrations`` records nothing for
an app its tables were built straight from the models (``migrate --run-syncdb``, or the test
suite's ``--nomigrations``), and the state is the code's own leaf migrations for that app -
which is what such a schema matches. Under ``--nomigrations`` the code has no migrations either,
so the state is empty for every app, identically on export and restore.
"""
from collections.abc import Iterable, Mapping

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.loader import MigrationLoader

from .contents import MIGRATION_APPS

Key = tuple[str, str]


def latest_applied(applied: Iterable[Key], parents: Mapping[Key, Iterable[Key]]
                   ) -> dict[str, list[str]]:
    """{app: sorted names of applied migrations that no applied migration of the app follows}."""
    applied = set(applied)
    superseded = {p for key in applied for p in parents.get(key, ()) if p in applied
                  and p[0] == key[0]}
    out: dict[str, list[str]] = {}
    for app, name in sorted(applied - superseded):
        out.setdefault(app, []).append(name)
    return out


def database_state(using: str = DEFAULT_DB_ALIAS) -> dict[str, list[str]]:
    loader = MigrationLoader(connections[using], ignore_no_migrations=True)
    parents = {key: [p.key for p in node.parents] for key, node in loader.graph.node_map.items()}
    latest = latest_applied(loader.applied_migrations or {}, parents)
    return {app: latest.get(app) or sorted(name for _, name in loader.graph.leaf_nodes(app))
            for app in MIGRATION_APPS}
