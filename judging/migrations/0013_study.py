"""Studies: judging's scoped rows get a study; what exists joins the default one.

Three steps so no row is ever without one: the column is added nullable, filled with the
default study, then made required (new rows default to it, ``studies.models.default_study_id``).
"""

import django.db.models.deletion
import studies.models
from django.conf import settings
from django.db import migrations, models

APP = 'judging'
MODELS = ['evalmodel', 'judgerun', 'submission']


def assign_default_study(apps, schema_editor):
    """Every existing row joins the default study (studies 0002 made it): one UPDATE per
    table, the same on SQLite and PostgreSQL."""
    study = apps.get_model("studies", "Study").objects.get(slug=settings.DEFAULT_STUDY_SLUG)
    for name in MODELS:
        apps.get_model(APP, name).objects.filter(study__isnull=True).update(study=study)
    if schema_editor.connection.vendor == "postgresql":
        # Check the new keys now: PostgreSQL refuses the ALTER TABLE that makes the column
        # required while deferred foreign-key checks of this transaction are pending.
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0016_study'),
        ('judging', '0012_judgment_rejected'),
        ('studies', '0002_default_study'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='evalmodel',
            name='one_reference_model',
        ),
        migrations.RemoveConstraint(
            model_name='submission',
            name='submission_version_once',
        ),
        migrations.AddField(
            model_name='evalmodel',
            name='study',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='models', to='studies.study'),
        ),
        migrations.AddField(
            model_name='judgerun',
            name='study',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='studies.study'),
        ),
        migrations.AddField(
            model_name='submission',
            name='study',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='studies.study'),
        ),
        migrations.RunPython(assign_default_study, migrations.RunPython.noop),
        migrations.AlterField(
            model_name='evalmodel',
            name='study',
            field=models.ForeignKey(default=studies.models.default_study_id, on_delete=django.db.models.deletion.PROTECT, related_name='models', to='studies.study'),
        ),
        migrations.AlterField(
            model_name='judgerun',
            name='study',
            field=models.ForeignKey(default=studies.models.default_study_id, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='studies.study'),
        ),
        migrations.AlterField(
            model_name='submission',
            name='study',
            field=models.ForeignKey(default=studies.models.default_study_id, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='studies.study'),
        ),
        migrations.AlterField(
            model_name='evalmodel',
            name='name',
            field=models.CharField(help_text='Unique within its study', max_length=100),
        ),
        migrations.AddConstraint(
            model_name='evalmodel',
            constraint=models.UniqueConstraint(fields=('study', 'name'), name='model_name_per_study'),
        ),
        migrations.AddConstraint(
            model_name='evalmodel',
            constraint=models.UniqueConstraint(condition=models.Q(('is_reference', True)), fields=('study', 'is_reference'), name='one_reference_model_per_study'),
        ),
        migrations.AddConstraint(
            model_name='submission',
            constraint=models.UniqueConstraint(fields=('study', 'name', 'version'), name='submission_version_once_per_study'),
        ),
    ]
