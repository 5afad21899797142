"""What a study backup holds: the models (in load order), their archive members and media files.

A study is every row of the apps ``studies``, ``annotation``, ``judging`` and ``agreement`` plus the
accounts behind the Workers: ``auth.User`` (password hashes included) and ``auth.Group``.
Left out on purpose: sessions, API tokens (``authtoken``: bearer secrets), the admin log, and
content types / permissions, which ``migrate`` recreates and which are referred to by natural key.
"""
from django.apps import apps
from django.conf import settings
from django.db.models import FileField, Model

STUDY_APPS = ("studies", "annotation", "judging", "agreement")
# Apps whose migration state must match for the archive's tables to fit the database's.
MIGRATION_APPS = ("contenttypes", "auth", "studies", "annotation", "judging", "agreement")
# Rows a freshly migrated database holds that the archive replaces: the default study
# (studies 0002), which nothing refers to while every other table is empty.
REPLACED = frozenset({"studies.study"})
# Groups are matched by name, not by id: `migrate` creates the role groups itself
# (annotation.0002_roles), so a freshly migrated database already has them.
MERGED_BY_NAME = frozenset({"auth.group"})
# Serialized with natural foreign keys (their groups by name, permissions by codename).
NATURAL_FOREIGN_KEYS = frozenset({"auth.group", "auth.user"})


def study_models() -> list[type[Model]]:
    """Groups first (users refer to them by name), users, then the apps' concrete models."""
    auth = [apps.get_model("auth", "Group"), apps.get_model(settings.AUTH_USER_MODEL)]
    ours = [m for app in STUDY_APPS for m in apps.get_app_config(app).get_models()
            if not m._meta.proxy]
    return auth + ours


def model_by_label() -> dict[str, type[Model]]:
    return {m._meta.label_lower: m for m in study_models()}


def data_member(label: str) -> str:
    return f"data/{label}.jsonl"


def media_member(name: str) -> str:
    return f"media/{name}"


def tables_that_must_be_empty() -> list[type[Model]]:
    """Every table restored with its ids, m2m link tables included (groups are merged)."""
    out = []
    for model in study_models():
        if model._meta.label_lower in MERGED_BY_NAME | REPLACED:
            continue
        out.append(model)
        out.extend(f.remote_field.through for f in model._meta.local_many_to_many
                   if f.remote_field.through._meta.auto_created)
    return out


def all_tables_models() -> list[type[Model]]:
    """Study models and their auto-created m2m tables (for sequences and constraint checks)."""
    out = []
    for model in study_models():
        out.append(model)
        out.extend(f.remote_field.through for f in model._meta.local_many_to_many
                   if f.remote_field.through._meta.auto_created)
    return out


def media_names() -> list[str]:
    """Every non-empty file name stored in a FileField/ImageField of a study model."""
    names: set[str] = set()
    for model in study_models():
        for field in model._meta.concrete_fields:
            if isinstance(field, FileField):
                names.update(n for n in model._base_manager.exclude(**{field.attname: ""})
                             .exclude(**{f"{field.attname}__isnull": True})
                             .values_list(field.attname, flat=True) if n)
    return sorted(names)
