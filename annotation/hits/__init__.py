"""HIT types: the registry and the engine's own types.

Apps register their HIT types in ``AppConfig.ready`` (judging registers the rating HITs), so the
engine never imports a later app.
"""
from .registry import HitType, all_hit_types, get_hit_type, register

__all__ = ["HitType", "all_hit_types", "get_hit_type", "register"]
from . import construction  # noqa: E402,F401  the dataset-building HIT types
