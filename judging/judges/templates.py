"""Versioned prompt templates: files shipped in ``prompts/``, overridable per judge in the admin.

Why data, not code: a verdict is only reproducible if we know the exact prompt, so every call
stores the template version (``name@v1`` for a shipped file, ``name@override-<sha>`` for an
admin override, so editing an override changes the version) and the hash of the rendered
messages.

File format (plain text)::

    version: 1
    source: where the structure comes from
    === system ===
    ...text with {{ placeholders }}...
    === user ===
    ...
    === assistant ===      (few-shot / primed turns, optional)
    === user ===

Placeholders are ``{{ name }}`` only, so single braces in prompts (``Rating:{5}``) and in the
substituted texts are left alone; substituted values are never re-scanned.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
ROLES = ("system", "user", "assistant")
_SECTION = re.compile(r"^=== (system|user|assistant) ===[ \t]*$", re.MULTILINE)
_PLACEHOLDER = re.compile(r"\{\{\s*([a-z_0-9]+)\s*\}\}")


class TemplateError(ValueError):
    """A template is malformed or a placeholder has no value."""


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    version: str  # e.g. "pairwise_reference_free@v1"
    messages: tuple[tuple[str, str], ...]  # (role, text with placeholders)

    @property
    def placeholders(self) -> set[str]:
        return {m for _, text in self.messages for m in _PLACEHOLDER.findall(text)}

    def render(self, **values: object) -> list[dict]:
        """Chat messages with every placeholder filled; a missing value is an error."""
        missing = self.placeholders - set(values)
        if missing:
            raise TemplateError(f"template {self.version}: no value for {sorted(missing)}")

        def fill(match: re.Match) -> str:
            return str(values[match.group(1)])

        return [{"role": role, "content": _PLACEHOLDER.sub(fill, text)}
                for role, text in self.messages]


def parse_template(name: str, text: str, *, override: bool = False) -> PromptTemplate:
    head, *_ = _SECTION.split(text, maxsplit=1)
    meta = {}
    for line in head.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            meta[key.strip().lower()] = value.strip()
    parts = _SECTION.split(text)[1:]
    if not parts:
        raise TemplateError(f"template {name!r}: no '=== user ===' section")
    messages = tuple((parts[i], parts[i + 1].strip("\n")) for i in range(0, len(parts), 2))
    if messages[-1][0] != "user":
        raise TemplateError(f"template {name!r}: the last section must be a user message")
    if override:
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]
        version = f"{name}@override-{digest}"
    else:
        version = f"{name}@v{meta.get('version', '0')}"
    return PromptTemplate(name=name, version=version, messages=messages)


@lru_cache(maxsize=64)
def shipped_template(name: str, directory: Path = PROMPTS_DIR) -> PromptTemplate:
    """``name``'s file in ``prompts/`` (or in the ``directory`` a kind shipped outside this
    app keeps its prompts in)."""
    path = directory / f"{name}.txt"
    if not path.is_file():
        raise TemplateError(f"no shipped template {name!r} in {directory}")
    return parse_template(name, path.read_text(encoding="utf-8"))


def shipped_names() -> list[str]:
    return sorted(p.stem for p in PROMPTS_DIR.glob("*.txt"))


def load_template(name: str, overrides: dict | None = None,
                  directory: Path | None = None) -> PromptTemplate:
    """The judge's override for ``name`` when it has one, else the shipped file."""
    text = (overrides or {}).get(name)
    if text:
        return _parse_override(name, text)
    return shipped_template(name, directory or PROMPTS_DIR)


@lru_cache(maxsize=256)
def _parse_override(name: str, text: str) -> PromptTemplate:
    return parse_template(name, text, override=True)
