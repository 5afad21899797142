"""Crowd marketplaces behind one interface, one subpackage each: ``local`` (in-house accounts,
the default), ``mturk`` (Mechanical Turk), ``prolific``.

A marketplace's subpackage holds everything that knows it: its ``provider`` (the ``Provider``
of ``base``, registered in ``annotation.core.marketplaces``), its client, arrival views and
their services, fees and ``urls`` (mounted at ``ext/<name>/`` by ``annotation/urls.py``).
What works for any marketplace stays here: ``base`` (the interface), ``services`` (launch,
sync, review, bonuses: one function per operation), ``models``, ``costs``, the admin.
Marketplaces never import each other. Keep this module import-free: the models package imports
``annotation.providers.models`` at start-up.
"""


def load_marketplaces() -> list[str]:
    """Import every subpackage's ``provider`` module (importing registers it); returns the
    modules loaded. Adding a marketplace is adding a subpackage: nothing here names one."""
    import pkgutil
    from importlib import import_module
    from importlib.util import find_spec

    loaded = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        module = f"{__name__}.{info.name}.provider"
        if info.ispkg and find_spec(module) is not None:
            import_module(module)
            loaded.append(module)
    return loaded
