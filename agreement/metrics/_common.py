"""What several metric modules share: pairing checks, package versions for provenance, and the
memoised Porter stemmer (ROUGE-L and METEOR both stem)."""
from __future__ import annotations

from collections.abc import Sequence
from functools import cache, lru_cache

from .registry import Reference


def ref_list(ref: Reference) -> list[str]:
    return [ref] if isinstance(ref, str) else list(ref)


def check(candidates: Sequence[str], references: Sequence[Reference]) -> None:
    if len(candidates) != len(references):
        raise ValueError(
            f"{len(candidates)} candidates but {len(references)} references: they must pair up"
        )
    for ref in references:
        if not isinstance(ref, str) and len(ref) == 0:
            raise ValueError("a reference list is empty")


def package_versions(*names: str) -> dict[str, str]:
    """{distribution: version} ('absent' when not installed), for provenance and cache keys."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in names:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "absent"
    return out


@cache
def stemmer():
    from nltk.stem.porter import PorterStemmer

    class _MemoStemmer(PorterStemmer):
        """Porter stemming is the METEOR and ROUGE hot spot; words repeat, so memoise."""

        @lru_cache(maxsize=100_000)  # noqa: B019 - one process-wide instance
        def stem(self, word, to_lowercase=True):
            return super().stem(word, to_lowercase)

    return _MemoStemmer()
