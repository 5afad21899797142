"""pycocoevalcap's CIDEr-D as sparse-matrix algebra, scored a chunk of items at a time.

Same formula as ``pycocoevalcap.cider.cider_scorer.CiderScorer``: tf-idf vectors per n-gram
order, IDF = log(#items) - log(max(1, items whose references contain the n-gram)), clipped
cosine min(h, r)*r / (|h||r|), Gaussian length penalty on the bigram counts, mean over orders
and references, x10 (``agreement.metrics.cider_d`` tests it against the stock scorer).

Why chunks: the IDF depends on every item's references, so the whole set must be scored
together, but only the references' n-grams are needed for it. They are counted once for the
set (``_References``: n-gram ids, document frequencies, weighted vectors); the candidates are
then counted ``chunk`` items at a time against those ids, so memory follows the chunk, not the
set (240K answers scored at once peaked at 2.7 GB). Pure NumPy/SciPy, no Django.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import sparse

CHUNK = 5_000  # candidates counted at once (5K-20K measured alike at 240K answers; 5K was faster)
_SHIFT = 1 << 31  # an n-gram's code: (id of its first n-1 words) * _SHIFT + its last word


class _Tokens:
    """Texts as one flat array of word ids, with each position's text and the number of
    words from it to its text's end (a k-gram starts where at least k remain)."""

    def __init__(self, texts: list[str], word_ids: dict[str, int]):
        docs = [[word_ids.setdefault(w, len(word_ids)) for w in t.split()] for t in texts]
        if len(word_ids) >= _SHIFT:
            raise ValueError("more distinct words than an n-gram code can hold")
        self.lengths = np.array([len(d) for d in docs], dtype=np.int64)
        self.flat = np.fromiter(itertools.chain.from_iterable(docs), np.int64,
                                int(self.lengths.sum()))
        del docs
        self.count = len(texts)
        self.doc = np.repeat(np.arange(len(texts), dtype=np.int64), self.lengths)
        starts = np.repeat(np.cumsum(self.lengths) - self.lengths, self.lengths)
        self.left = np.repeat(self.lengths, self.lengths) - (np.arange(len(self.flat)) - starts)

    def next_words(self, k: int) -> np.ndarray:
        """The word k-1 positions on from each position (0 past the end)."""
        nxt = np.zeros_like(self.flat)
        nxt[: max(0, len(self.flat) - k + 1)] = self.flat[k - 1:]
        return nxt

    def bigrams(self) -> np.ndarray:
        """Bigram count of each text (what the length penalty compares)."""
        return np.maximum(self.lengths - 1, 0).astype(float)


class _References:
    """The set's distinct reference texts, counted once: per order k, the sorted codes of
    their k-grams (a k-gram's id is its rank), its IDF over the set's items, the texts'
    tf-idf rows and their norms."""

    def __init__(self, texts: list[str], text_of_set, set_items: np.ndarray, n_items: int,
                 n: int, word_ids: dict[str, int]):
        tokens = _Tokens(texts, word_ids)
        self.bigrams = tokens.bigrams()
        self.log_items = math.log(n_items)
        self.codes, self.idf, self.weighted, self.norms = [], [], [], []
        # Only the positions where a k-gram starts are kept, and fewer remain at each order:
        # arrays over every word of every reference, several at once, were the peak of
        # caching CIDEr-D for 240K answers.
        # Positions, texts and words left fit 32 bits below 2**31 words (a quarter of the
        # peak at 240K answers was these arrays in 64 bits).
        index = np.int32 if len(tokens.flat) < 2**31 else np.int64
        words, at = tokens.flat, np.arange(len(tokens.flat), dtype=index)
        doc, left = tokens.doc.astype(index), tokens.left.astype(index)
        prefix = np.zeros(len(at), np.int64)  # id of the (k-1)-gram starting at each of ``at``
        del tokens
        for k in range(1, n + 1):
            ok = left >= k
            at, doc, left, prefix = at[ok], doc[ok], left[ok], prefix[ok]
            del ok
            grams = prefix * _SHIFT + words[at + (k - 1)]
            if k == n:  # the last order's sort is the peak: drop what only a next one needs
                del words, at, left
            codes, prefix = np.unique(grams, return_inverse=True)
            del grams
            counts = sparse.csr_matrix(  # duplicate (row, col) entries sum: term frequencies
                (np.ones(len(prefix)), (doc, prefix)), shape=(len(texts), len(codes)))
            # Document frequency: in how many items' reference sets each k-gram occurs.
            df = set_items @ ((text_of_set @ (counts > 0)) > 0)
            idf = self.log_items - np.log(np.maximum(1.0, df))
            weighted = (counts @ _diagonal(idf)).tocsr()
            del counts, df
            self.codes.append(codes)
            self.idf.append(idf)
            self.weighted.append(weighted)
            self.norms.append(_row_norms(weighted))


def _diagonal(values: np.ndarray):
    """``sparse.diags(values)`` built as CSR straight away: scipy converts a DIA matrix to CSR
    through COO for a product, several arrays the length of every k-gram of the references.
    Zeros are kept as entries; a product's zero sums are dropped all the same."""
    m = len(values)
    return sparse.csr_matrix((values, np.arange(m, dtype=np.int32),
                              np.arange(m + 1, dtype=np.int32)), shape=(m, m))


def _row_norms(matrix) -> np.ndarray:
    return np.sqrt(matrix.multiply(matrix) @ np.ones(matrix.shape[1]))


def _candidate_vectors(tokens: _Tokens, refs: _References, k: int, prefixes: tuple):
    """(tf-idf rows of the candidates' k-grams in the references' ids, their norms over
    every k-gram, the next prefixes). A k-gram no reference has (IDF log #items) counts in
    the norm only; it is told apart from others by ids of the chunk's own."""
    own_prefix, ref_prefix = prefixes
    ok = tokens.left >= k
    nxt = tokens.next_words(k)[ok]
    # Ids of the chunk's own, for every k-gram (the norm needs each one's term frequency).
    own, own_ids = np.unique(own_prefix[ok] * _SHIFT + nxt, return_inverse=True)
    # The references' id of each k-gram: its code's rank, when its first k-1 words are one of
    # the references' (k-1)-grams and the code is there (else -1).
    codes = refs.codes[k - 1]
    wanted = ref_prefix[ok] * _SHIFT + nxt
    ref_ids = np.full(len(wanted), -1, np.int64)
    if len(codes):
        at = np.minimum(np.searchsorted(codes, wanted), len(codes) - 1)
        found = (ref_prefix[ok] >= 0) & (codes[at] == wanted)
        ref_ids[found] = at[found]
    found = ref_ids >= 0
    ref_of_own = np.full(len(own), -1, np.int64)
    ref_of_own[own_ids] = ref_ids
    idf_own = np.full(len(own), refs.log_items)
    seen = ref_of_own >= 0
    idf_own[seen] = refs.idf[k - 1][ref_of_own[seen]]
    doc = tokens.doc[ok]
    counts = sparse.csr_matrix((np.ones(len(own_ids)), (doc, own_ids)),
                               shape=(tokens.count, len(own)))
    norms = _row_norms(counts @ _diagonal(idf_own))
    shared = sparse.csr_matrix((np.ones(int(found.sum())), (doc[found], ref_ids[found])),
                               shape=(tokens.count, len(codes)))
    weighted = (shared @ _diagonal(refs.idf[k - 1])).tocsr()
    next_own, next_ref = np.zeros_like(tokens.flat), np.full_like(tokens.flat, -1)
    next_own[ok], next_ref[ok] = own_ids, ref_ids
    return weighted, norms, (next_own, next_ref)


def cider_d_scores(tests: list[str], refs: list[list[str]], *, n: int, sigma: float,
                   chunk: int = CHUNK, tokenize=None) -> list[float]:
    """CIDEr-D (0-10) of each tokenized candidate against its tokenized references, with
    n-grams 1..``n`` and length penalty ``sigma`` (``agreement.metrics`` holds pycocoevalcap's
    values). With ``tokenize``, ``tests`` are raw texts tokenized a chunk at a time (all of
    them tokenized at once is a second copy of every answer)."""
    flat_refs = [r for rs in refs for r in rs]
    n_refs = np.array([len(rs) for rs in refs], dtype=np.int64)
    ref_item = np.repeat(np.arange(len(refs)), n_refs)  # reference row -> item
    # Items share references (every model's answer to an instance has the instance's): each
    # distinct reference text is counted once, and each distinct reference set once, weighted
    # by how many items have it (the document frequency counts items).
    texts = {r: i for i, r in enumerate(dict.fromkeys(flat_refs))}
    ref_text = np.fromiter((texts[r] for r in flat_refs), np.int64, len(flat_refs))
    del flat_refs
    sets: dict = {}
    item_set = np.fromiter((sets.setdefault(tuple(rs), len(sets)) for rs in refs), np.int64,
                           len(refs))
    set_items = np.bincount(item_set, minlength=len(sets)).astype(float)
    first_item = np.unique(item_set, return_index=True)[1]  # an item of each distinct set
    set_rows = _rows_of_items(ref_item, first_item)
    text_of_set = sparse.csr_matrix(
        (np.ones(len(set_rows)), (np.repeat(np.arange(len(sets)), n_refs[first_item]),
                                  ref_text[set_rows])), shape=(len(sets), len(texts)))
    word_ids: dict[str, int] = {}
    references = _References(list(texts), text_of_set, set_items, len(refs), n, word_ids)
    del texts, sets, item_set, text_of_set
    val = np.zeros((len(ref_item), n))
    delta = np.zeros(len(ref_item))
    for start in range(0, len(tests), chunk):
        stop = min(start + chunk, len(tests))
        texts = tests[start:stop]
        tokens = _Tokens([tokenize(t) for t in texts] if tokenize else texts, word_ids)
        rows = slice(*np.searchsorted(ref_item, [start, stop]))  # this chunk's reference rows
        item, text = ref_item[rows] - start, ref_text[rows]
        delta[rows] = tokens.bigrams()[item] - references.bigrams[text]
        prefixes = (np.zeros_like(tokens.flat), np.zeros_like(tokens.flat))
        for k in range(1, n + 1):
            weighted, norms, prefixes = _candidate_vectors(tokens, references, k, prefixes)
            ref_rows = references.weighted[k - 1][text]
            clipped = weighted[item].minimum(ref_rows).multiply(ref_rows) @ np.ones(
                ref_rows.shape[1])
            denom = norms[item] * references.norms[k - 1][text]
            val[rows, k - 1] = np.divide(clipped, denom, out=np.zeros_like(clipped),
                                         where=denom != 0)
    per_ref = val.sum(axis=1) * np.exp(-(delta**2) / (2 * sigma**2)) / n
    per_item = np.bincount(ref_item, weights=per_ref, minlength=len(refs))
    return (per_item / n_refs * 10.0).tolist()


def _rows_of_items(ref_item, items):
    """The reference rows of ``items``, item by item (rows are grouped by item, in order)."""
    starts = np.searchsorted(ref_item, items)
    lengths = np.searchsorted(ref_item, items, side="right") - starts
    return np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
