"""METEOR: NLTK's, reading WordNet offline from ``$NLTK_DATA`` or ``<project>/var/nltk_data``
(``make wordnet`` lays it out), with memoised WordNet look-ups and stemming."""
from __future__ import annotations

import os
import re
import threading
import warnings
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from . import _common
from .registry import Reference, register

PROJECT_DIR = Path(__file__).resolve().parents[2]
DEFAULT_NLTK_DATA = PROJECT_DIR / "var" / "nltk_data"  # where `make wordnet` puts it


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


_METEOR_TOKEN = re.compile(r"\w+(?:[-']\w+)*|[^\w\s]")


def meteor_tokenize(text: str) -> list[str]:
    """Words (keeping inner hyphens/apostrophes) and punctuation; no punkt model needed."""
    return _METEOR_TOKEN.findall(text)


def _settings(options: dict) -> dict:
    import inspect

    from nltk.translate.meteor_score import meteor_score

    params = inspect.signature(meteor_score).parameters
    return {"implementation": "nltk.translate.meteor_score",
            **{p: params[p].default for p in ("alpha", "beta", "gamma")},
            "matching": "exact, Porter stem, WordNet synonym", "preprocess": "lower-case",
            "tokenizer": "regex words (inner - and ') and punctuation; no punkt",
            "wordnet": wordnet_version(), "multi_reference": "best",
            "scale": "0-1", "packages": _common.package_versions("nltk")}


@register(name="meteor", label="METEOR", settings=_settings, isolated=True)
def meteor(candidates: Sequence[str], references: Sequence[Reference]) -> list[float]:
    """NLTK METEOR (exact + Porter stem + WordNet synonym matching), 0-1, best reference."""
    from nltk.translate.meteor_score import meteor_score

    _common.check(candidates, references)
    wn, stemmer = wordnet(), _common.stemmer()
    return [
        meteor_score(
            [meteor_tokenize(r) for r in _common.ref_list(ref)],
            meteor_tokenize(cand),
            stemmer=stemmer,
            wordnet=wn,
        )
        for cand, ref in zip(candidates, references, strict=True)
    ]
