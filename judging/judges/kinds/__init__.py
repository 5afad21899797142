"""Judge kinds: what a judge asks, of which items, and how its answers are read and stored.

A kind is one class with ``@register`` in one module of this package (and its prompt file in
``../prompts/``), shaped like the HIT types (``annotation.engine.hit_types``): callers ask the
kind instead of branching on its slug. ``load_kinds`` imports every module here at app-ready,
so a new kind is one new module; ``Judge.kind`` takes its choices from the registry.

This module imports nothing from the apps: ``judges/models.py`` reads the choices from it while
the models load. The shared shapes (pairwise verdicts on comparisons, grades on responses)
live in ``shapes.py``.
"""
from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import Any, ClassVar


class JudgeKind:
    """The contract every kind fills (``shapes.PairwiseKind`` / ``shapes.GradingKind`` fill
    most of it). Methods take the ``Judge`` row: a kind is stateless, one instance per slug."""

    slug: ClassVar[str]
    label: ClassVar[str]
    #: Where the kind sits in ``Judge.kind``'s choices (the admin's menu, the migration state).
    position: ClassVar[int] = 100
    #: True: A/B verdicts on comparisons, asked in both orderings; False: grades of responses.
    pairwise: ClassVar[bool] = False
    #: (lowest, highest) grade a grading kind gives; None for verdicts.
    score_range: ClassVar[tuple[int, int] | None] = None
    #: Images always go as image parts (else only when the judge's ``send_images`` is on).
    always_sends_images: ClassVar[bool] = False
    #: May judge submitted models against the reference (single-turn pairwise kinds).
    judges_submissions: ClassVar[bool] = False
    #: Its verdicts fill the ConvBench hierarchical-ablation table (per turn, per condition).
    ablation: ClassVar[bool] = False
    #: The name of the stand-in judge of this kind ``make demo`` creates ("": none).
    demo_name: ClassVar[str] = ""
    #: Whether that stand-in sends the images.
    demo_sends_images: ClassVar[bool] = False
    #: Where the kind's prompt files are when not in ``judges/prompts/`` (a kind kept
    #: outside this app); a judge's ``template_overrides`` still win.
    prompts_dir: ClassVar[Path | None] = None

    def template(self, name: str, judge):
        """The prompt template ``name`` as this judge sends it (its override, else the file)."""
        from ..templates import load_template

        return load_template(name, judge.template_overrides, self.prompts_dir)

    # -- items
    def candidates(self, study_id: int):
        """Every item (comparison or response) of the study this kind can take."""
        raise NotImplementedError

    def check_item(self, obj, is_conversation: bool) -> None:
        """Refuse (``ValidationError`` naming the item) one this kind cannot judge."""

    def orderings(self) -> tuple[str, ...]:
        raise NotImplementedError

    def item_model(self):
        """The model of this kind's items (``Comparison`` or ``Response``)."""
        raise NotImplementedError

    def scope(self, items: list) -> str:
        """The ``JudgeRun.Scope`` of a run over ``items``."""
        raise NotImplementedError

    def load_query(self, images):
        """The queryset ``plans.load_items`` filters: the items with what their prompts need
        (``images``: the prefetch of each instance's images)."""
        raise NotImplementedError

    # -- prompts and answers
    def run_unit(self, judge, item, ordering: str, caller) -> dict:
        """Judge one unit through ``caller``: ``{turn: verdict}`` or ``{turn: grade, ...}``."""
        raise NotImplementedError

    def judgment_rows(self, item, results: dict[str, dict], judgment) -> tuple[list[dict], Any]:
        """One item's ``Judgment`` rows from its units' ``results`` (by ordering), each made
        by ``judgment(turn, **fields)``, and which stored judgments are the item's (a column
        name, or a Q)."""
        raise NotImplementedError


_REGISTRY: dict[str, JudgeKind] = {}


def register(cls: type[JudgeKind]) -> type[JudgeKind]:
    """Class decorator adding a judge kind to the registry (one instance per slug)."""
    if cls.slug in _REGISTRY and type(_REGISTRY[cls.slug]).__qualname__ != cls.__qualname__:
        raise RuntimeError(f"judge kind {cls.slug!r} registered twice")
    _REGISTRY[cls.slug] = cls()
    return cls


def unregister(slug: str) -> None:
    """Take a kind out (tests that register a toy kind clean up with it)."""
    _REGISTRY.pop(slug, None)


def get_kind(slug: str) -> JudgeKind:
    try:
        return _REGISTRY[slug]
    except KeyError:
        raise LookupError(f"unknown judge kind {slug!r}; known: {sorted(_REGISTRY)}") from None


def all_kinds() -> list[JudgeKind]:
    return sorted(_REGISTRY.values(), key=lambda k: (k.position, k.slug))


def kind_choices() -> list[tuple[str, str]]:
    """``Judge.kind``'s choices (a callable: read when asked, after the kinds loaded)."""
    return [(k.slug, k.label) for k in all_kinds()]


def load_kinds() -> None:
    """Import every module of this package (each registers its kinds); called at app-ready."""
    for module in pkgutil.iter_modules(__path__):
        if not module.name.startswith("_"):
            importlib.import_module(f"{__name__}.{module.name}")


class _KindNames(type):
    """``Judge.Kind.PAIRWISE`` is ``"pairwise"``: the registered slugs by upper-case name,
    and ``Judge.Kind.values`` every registered slug, so the kinds are written once."""

    def __getattr__(cls, name: str) -> str:
        slug = name.lower()
        if name.isupper() and slug in _REGISTRY:
            return slug
        raise AttributeError(f"no judge kind {name}")

    @property
    def values(cls) -> list[str]:
        return [k.slug for k in all_kinds()]

    @property
    def choices(cls) -> list[tuple[str, str]]:
        return kind_choices()


class KindNames(metaclass=_KindNames):
    """Named slugs of the registered kinds (see ``_KindNames``)."""


__all__ = ["JudgeKind", "KindNames", "all_kinds", "get_kind", "kind_choices", "load_kinds",
           "register", "unregister"]
