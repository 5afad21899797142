"""Data: grades stored before the fix with kind 'pairwise' become score judgments; votes collected
through a rating HIT get their '<HIT type>@<version>' as template version; imported rows get
their file's name (kept in meta) as ``import_file``.

Automatic rubric / direct graders wrote their verdicts (response set, no comparison) without a
kind, so they defaulted to 'pairwise' and every score reader skipped them. A failed grade (score
empty, no choice) is a grade too. Rows with a choice are left alone: they are not grades.
"""
from django.db import migrations
from django.db.models import Q


def grades_are_scores(apps, schema_editor):
    Judgment = apps.get_model("judging", "Judgment")
    (Judgment.objects.filter(kind="pairwise", comparison__isnull=True, response__isnull=False)
     .filter(Q(score__isnull=False) | Q(choice="")).update(kind="score"))


def hit_versions(apps, schema_editor):
    Judgment = apps.get_model("judging", "Judgment")
    todo = Judgment.objects.filter(assignment__isnull=False, template_version="")
    pairs = set(todo.values_list("assignment__batch__hit_type", "assignment__hit_type_version"))
    for hit_type, version in sorted(pairs):
        todo.filter(assignment__batch__hit_type=hit_type,
                    assignment__hit_type_version=version).update(
            template_version=f"{hit_type}@{version}"[:80])


def import_files(apps, schema_editor):
    """Imported rows kept their file's name in meta; the import time was not recorded."""
    Judgment = apps.get_model("judging", "Judgment")
    todo = Judgment.objects.filter(import_file="", meta__has_key="import")
    for name in set(todo.values_list("meta__import", flat=True)):
        todo.filter(meta__import=name).update(import_file=str(name)[-200:])


class Migration(migrations.Migration):

    dependencies = [
        ("judging", "0004_judgment_provenance"),
        ("annotation", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(grades_are_scores, migrations.RunPython.noop),
        migrations.RunPython(hit_versions, migrations.RunPython.noop),
        migrations.RunPython(import_files, migrations.RunPython.noop),
    ]
