"""Forking a worker process that never touches the broker.

kombu registers ``multiprocessing`` after-fork hooks that close, in every child, each broker
connection the parent holds. Closing a Redis channel the parent left polling (an in-process
Celery worker that stopped mid-BRPOP) reads for a BRPOP reply on a socket the parent owns, and
the child blocks there forever: a judge lane process hung so in a full ``make test`` after the
Celery worker tests. A child that never uses the broker can leave those sockets alone, so its
parent forks without kombu's hooks (``os.fork`` runs none of them; only
``multiprocessing.Process`` does).
"""
import multiprocessing.util
from contextlib import contextmanager


@contextmanager
def without_broker_cleanup_after_fork():
    """Start ``multiprocessing`` children inside this block: kombu's after-fork hooks are left
    out of the registry the children copy, and put back in the parent at once."""
    registry = multiprocessing.util._afterfork_registry
    kombu = {key: obj for key, obj in list(registry.items())
             if getattr(key[2], "__module__", "").startswith("kombu")}
    for key in kombu:
        registry.pop(key, None)
    try:
        yield
    finally:
        registry.update(kombu)
