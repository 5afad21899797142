"""Errors of the judging services; every one means nothing was written."""
from dataclasses import dataclass, field


@dataclass
class ImportReport:
    """What an import did (or would have done): counts and the rows it could not match."""

    rows: int = 0
    created: int = 0
    unchanged: int = 0
    unmatched: list[str] = field(default_factory=list)
    created_objects: dict[str, int] = field(default_factory=dict)
    responses: list = field(default_factory=list, repr=False)  # created Response rows

    def as_text(self) -> str:
        text = f"{self.rows} rows: {self.created} created, {self.unchanged} unchanged"
        if self.unmatched:
            text += f", {len(self.unmatched)} unmatched:\n  " + "\n  ".join(self.unmatched[:50])
        return text


class ImportRejected(ValueError):
    """A bad or unmatched row; the message names the rows and nothing was written."""

    def __init__(self, message: str, report: ImportReport | None = None):
        super().__init__(message)
        self.report = report
