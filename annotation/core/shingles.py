"""Near-duplicate text by character shingles and Jaccard similarity (pure, no Django).

A text is lower-cased and reduced to its words joined by single spaces (so case, punctuation
and spacing do not hide a copy); its shingles are the set of its ``SIZE``-character windows.
Two texts' similarity is the Jaccard index of their shingle sets: 1.0 for the same words in
the same order, near 0 for unrelated sentences. Character windows (not word n-grams) keep a
short caption or a one-line instruction comparable.

Exact Jaccard, not MinHash: the submit path compares one answer with a bounded candidate set
(``FLAG_DUPLICATE_CANDIDATES`` texts, each cut to ``MAX_CHARS``), where exact sets cost tens
of milliseconds and need no signature storage or library; MinHash/LSH pays off for all-pairs
search over a whole corpus, which this does not do.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

SIZE = 5
MAX_CHARS = 1000  # of a normalized text shingled: a copy shows in its start; keeps a check cheap
_WORD = re.compile(r"\w+")


def normalized(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def shingles(text: str, size: int = SIZE) -> frozenset[str]:
    """The windows of the text's first ``MAX_CHARS`` normalized characters; a shorter
    (non-empty) text is its own shingle."""
    flat = normalized(text)[:MAX_CHARS]
    if not flat:
        return frozenset()
    if len(flat) <= size:
        return frozenset([flat])
    return frozenset(flat[i:i + size] for i in range(len(flat) - size + 1))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b|; 0.0 when either is empty (an empty text duplicates nothing)."""
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def most_similar(text: str, others: Iterable[str]) -> tuple[float, int | None]:
    """(highest similarity, index in ``others``) of ``text`` against each of ``others``;
    (0.0, None) when nothing shares a shingle with it."""
    mine = shingles(text)
    best, where = 0.0, None
    for index, other in enumerate(others):
        score = jaccard(mine, shingles(other))
        if score > best:
            best, where = score, index
    return best, where
