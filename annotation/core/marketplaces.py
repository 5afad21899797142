"""The marketplace registry: each provider registers here by name, and whoever needs a
marketplace's operations (fees, a batch's cost, a note at upload, its arrival URLs) asks for
it by name or walks ``registered()``, and the marketplaces hear when the engine blocks a worker
(``on_worker_blocked``). The engine and ``annotation/urls.py`` ask here and never import a
marketplace (``annotation.providers.<name>``), which builds on the engine; every subpackage of
``annotation.providers`` with a ``provider`` module registers when the app is ready
(``AnnotationConfig.ready``)."""
from annotation.core.clients.errors import MarketplaceError

_REGISTRY: dict[str, type] = {}
_SUBMIT_HOSTS: tuple[str, ...] | None = None  # every response's CSP asks: kept until a change


def register(cls: type) -> type:
    """Class decorator adding a ``providers.base.Provider`` subclass under its ``name``."""
    global _SUBMIT_HOSTS
    _REGISTRY[cls.name] = cls
    _SUBMIT_HOSTS = None
    return cls


def get_provider(name: str):
    """A fresh provider (``providers.base.Provider``) for ``name`` ("local", "mturk", …)."""
    try:
        return _REGISTRY[name]()
    except KeyError:
        raise MarketplaceError(f"Unknown provider {name!r}") from None


def registered() -> list[type]:
    """Every registered provider class, by name (the URL loop mounts their ``urls``)."""
    return [_REGISTRY[name] for name in sorted(_REGISTRY)]


def submit_hosts() -> list[str]:
    """Where our after-submit page may post (the pages' CSP ``form-action``): every registered
    provider's ``submit_hosts``, in registry order."""
    global _SUBMIT_HOSTS
    if _SUBMIT_HOSTS is None:
        hosts = [host for cls in registered() for host in cls.submit_hosts]
        _SUBMIT_HOSTS = tuple(dict.fromkeys(hosts))
    return list(_SUBMIT_HOSTS)


def unregister(name: str) -> None:
    """Take ``name`` out (a test's toy marketplace leaves no trace)."""
    global _SUBMIT_HOSTS
    _REGISTRY.pop(name, None)
    _SUBMIT_HOSTS = None


_BLOCK_HOOKS: list = []


def on_worker_blocked(hook):
    """Decorator: ``hook(worker_id)`` runs after the engine blocks a marketplace worker (after
    its commit)."""
    _BLOCK_HOOKS.append(hook)
    return hook


def worker_blocked(worker_id: int) -> None:
    for hook in _BLOCK_HOOKS:
        hook(worker_id)
