"""What a marketplace call (Mechanical Turk, Prolific) can fail with, shared by the clients and
the provider interface built on them."""


class MarketplaceError(Exception):
    """A marketplace call failed; ``definite`` is True when nothing can have happened remotely."""

    def __init__(self, message: str, *, definite: bool = True):
        super().__init__(message)
        self.definite = definite


class NotSupported(MarketplaceError):
    """This marketplace has no such operation."""


class ProductionNotConfirmed(MarketplaceError):
    """Production mode is on but this launch was not explicitly confirmed."""
