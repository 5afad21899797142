"""BERTScore F1 computed the way ``bert_score`` computes it, faster on real, mixed-length text.

``bert_score`` sorts sentences by word count and embeds them 64 at a time, each batch padded to
its longest member: on answers of 5 to 500 tokens most of a batch is padding, and the model's
arithmetic (linear layers, attention) runs on it. Here each sentence is tokenized once with
``bert_score``'s own ``sent_encode``, sentences are sorted by *token* count and batched under a
padded-token budget (long sentences in small batches, short ones in large), and each pair is
matched on its own (see ``_match``). The values equal ``bert_score``'s for each pair scored
alone, up to float rounding (the benchmark and the tests compare them).

F1 values are kept per (model, layers, candidate, reference) in a bounded in-process cache, so
a report that scores the same pairs again computes nothing.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

TOKEN_BUDGET = 8192  # padded tokens per embedding batch
MAX_BATCH = 64  # sentences per batch at most (bert_score's default batch size)
CACHE_PAIRS = 500_000

_cache: OrderedDict[tuple, float] = OrderedDict()
_cache_lock = threading.Lock()


def _length_batches(lengths: Sequence[int], budget: int, max_batch: int) -> list[list[int]]:
    """Indices sorted by length (longest first), cut so that batch size × longest ≤ budget."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches, current = [], []
    for i in order:
        longest = lengths[current[0]] if current else lengths[i]
        if current and ((len(current) + 1) * longest > budget or len(current) >= max_batch):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


def _embed(scorer, sentences: list[str]) -> dict[str, tuple]:
    """sentence → (embedding [tokens × dim], idf weights [tokens]) as bert_score's stats."""
    import torch
    from bert_score.utils import bert_encode, padding, sent_encode

    tokenizer, model = scorer._tokenizer, scorer._model
    device = next(model.parameters()).device
    encoded = [sent_encode(tokenizer, s) for s in sentences]
    idf = {tokenizer.sep_token_id: 0.0, tokenizer.cls_token_id: 0.0}  # no-idf, as bert_score
    stats = {}
    for batch in _length_batches([len(e) for e in encoded], TOKEN_BUDGET, MAX_BATCH):
        ids, _, mask = padding([encoded[i] for i in batch], tokenizer.pad_token_id)
        weights, _, _ = padding([[idf.get(t, 1.0) for t in encoded[i]] for i in batch], 0,
                                dtype=torch.float)
        emb = bert_encode(model, ids.to(device), attention_mask=mask.to(device),
                          all_layers=False).cpu()
        for row, i in enumerate(batch):
            n = len(encoded[i])
            stats[sentences[i]] = (emb[row, :n], weights[row, :n])
    return stats


def _match(stats: dict, hyps: list[str], refs: list[str]) -> list[float]:
    """F1 per (hyp, ref) pair: greedy cosine matching with weights, as ``bert_score`` computes
    one pair alone. (Batched, ``bert_score`` pads pairs to a common length and its masked
    zeros then compete in the max whenever a token's real similarities are all negative, so
    its value for a pair depends on which pairs share its batch — by up to 0.007 on
    VisIT-Bench answers. Alone, a pair has no padding: that value is a function of the pair,
    which is also what makes it cacheable.)"""
    import torch

    normed = {}

    def unit(sentence):
        if sentence not in normed:
            emb, idf = stats[sentence]
            normed[sentence] = (emb / emb.norm(dim=-1, keepdim=True), idf / idf.sum())
        return normed[sentence]

    out = []
    with torch.no_grad():
        for hyp, ref in zip(hyps, refs, strict=True):
            (h, h_idf), (r, r_idf) = unit(hyp), unit(ref)
            sim = h @ r.T
            precision = float((sim.max(dim=1)[0] * h_idf).sum())
            recall = float((sim.max(dim=0)[0] * r_idf).sum())
            total = precision + recall
            out.append(2 * precision * recall / total if total else 0.0)
    return out


def f1_scores(scorer, key: tuple, hyps: Sequence[str], refs: Sequence[str]) -> list[float]:
    """F1 of each (hyp, ref) pair (non-empty strings), from the cache where known.
    ``key`` names the configuration (model path, layers) the cache is keyed on."""
    with _cache_lock:
        known = {i: _cache.get((key, h, r))
                 for i, (h, r) in enumerate(zip(hyps, refs, strict=True))}
    todo = [i for i, v in known.items() if v is None]
    if todo:
        sentences = list(dict.fromkeys([hyps[i] for i in todo] + [refs[i] for i in todo]))
        values = _match(_embed(scorer, sentences), [hyps[i] for i in todo],
                        [refs[i] for i in todo])
        with _cache_lock:
            for i, v in zip(todo, values, strict=True):
                known[i] = v
                _cache[(key, hyps[i], refs[i])] = v
            while len(_cache) > CACHE_PAIRS:
                _cache.popitem(last=False)
    return [known[i] for i in range(len(hyps))]


def cache_clear() -> None:
    with _cache_lock:
        _cache.clear()
