"""The local provider: every ``Provider`` default (no calls, no fees, no arrival URLs)."""
from annotation.providers.base import Provider, register


@register
class LocalProvider(Provider):
    """In-house accounts: nothing to publish or pay through an API (the default)."""

    name = "local"
