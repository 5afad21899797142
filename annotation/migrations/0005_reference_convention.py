"""VisIT-Bench's reference convention and Table 2's denominator (issue: right on other
people's data).

Multi-image VisIT-Bench rows imported before this stored the source dataset's label ("Yes",
"Image 2", often empty) as the benchmark reference; the reference is the human-verified GPT-4
answer. The label moves to ``source_label``; a verified row's reference becomes its GPT-4 answer
and a rejected row has none. ``reference_rated_by`` records who judged the LLM answer, so Table 2
counts only instances people rated.
"""

from django.db import migrations, models


VERIFIED, PENDING = "verified", "pending"


def move_labels(apps, schema_editor):
    Instance = apps.get_model("annotation", "Instance")
    for instance in Instance.objects.filter(source="visitbench", extra__layout="multi"):
        instance.source_label = instance.reference_output
        instance.reference_output = (instance.candidate_reference
                                     if instance.reference_status == VERIFIED else "")
        instance.reference_rated_by = "imported" if instance.reference_status != PENDING else ""
        instance.save(update_fields=["source_label", "reference_output", "reference_rated_by"])
    Instance.objects.filter(source="crowd").exclude(reference_status=PENDING).update(
        reference_rated_by="crowd")


def refuse_duplicate_ids(apps, schema_editor):
    """Say which ids repeat instead of failing on the constraint with a bare IntegrityError."""
    from django.db.models import Count

    Instance = apps.get_model("annotation", "Instance")
    repeats = list(Instance.objects.exclude(external_id="").values("source", "external_id")
                   .annotate(n=Count("pk")).filter(n__gt=1)[:20])
    if repeats:
        raise RuntimeError("instances share an external id within their source; merge or rename "
                           f"them before migrating: {repeats}")


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0004_claim_indexes'),
    ]

    operations = [
        migrations.AddField(
            model_name='instance',
            name='reference_rated_by',
            field=models.CharField(blank=True, choices=[('', 'Nobody (human-written or unrated reference)'), ('imported', 'Ratings imported with the data'), ('crowd', 'Verification HITs')], default='', max_length=10),
        ),
        migrations.AddField(
            model_name='instance',
            name='source_label',
            field=models.TextField(blank=True, help_text="The source dataset's own label (VisIT-Bench's reference_output column, e.g. 'Yes' or 'Image 2'); kept for export, never scored against"),
        ),
        migrations.AlterField(
            model_name='instance',
            name='reference_output',
            field=models.TextField(blank=True, help_text="The benchmark's reference: the human-verified LLM answer or a human-written one; empty when the LLM answer was rejected"),
        ),
        migrations.RunPython(move_labels, migrations.RunPython.noop),
        migrations.RunPython(refuse_duplicate_ids, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='instance',
            constraint=models.UniqueConstraint(condition=models.Q(('external_id', ''), _negated=True), fields=('source', 'external_id'), name='external_id_per_source'),
        ),
    ]
