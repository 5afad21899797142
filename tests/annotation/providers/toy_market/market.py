"""The toy marketplace's side, in memory: the units it published, what workers submitted to
it, what it approved and the bonuses it paid."""
from dataclasses import dataclass, field

from annotation.providers.base import RemoteSubmission


@dataclass
class ToyMarket:
    units: dict[str, str] = field(default_factory=dict)  # our token -> its unit id
    pages: dict[str, str] = field(default_factory=dict)  # its unit id -> our arrival URL
    submissions: dict[str, RemoteSubmission] = field(default_factory=dict)  # by seat id
    approved: list[str] = field(default_factory=list)
    bonuses: list[tuple] = field(default_factory=list)

    def clear(self) -> None:
        self.__init__()


MARKET = ToyMarket()
