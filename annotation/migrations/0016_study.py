"""Studies: annotation's scoped rows get a study; what exists joins the default one.

Three steps so no row is ever without one: the column is added nullable, filled with the
default study, then made required (new rows default to it, ``studies.models.default_study_id``).
"""

import django.db.models.deletion
import studies.models
from django.conf import settings
from django.db import migrations, models

APP = 'annotation'
MODELS = ['batch', 'instance', 'webhookendpoint']


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
        ('annotation', '0015_prolific_audience_hooks'),
        ('studies', '0002_default_study'),
    ]

    operations = [
        migrations.AddField(
            model_name='batch',
            name='study',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='batches', to='studies.study'),
        ),
        migrations.AddField(
            model_name='instance',
            name='study',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='instances', to='studies.study'),
        ),
        migrations.AddField(
            model_name='webhookendpoint',
            name='study',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='studies.study'),
        ),
        migrations.RunPython(assign_default_study, migrations.RunPython.noop),
        migrations.AlterField(
            model_name='batch',
            name='study',
            field=models.ForeignKey(default=studies.models.default_study_id, on_delete=django.db.models.deletion.PROTECT, related_name='batches', to='studies.study'),
        ),
        migrations.AlterField(
            model_name='instance',
            name='study',
            field=models.ForeignKey(default=studies.models.default_study_id, on_delete=django.db.models.deletion.PROTECT, related_name='instances', to='studies.study'),
        ),
        migrations.AlterField(
            model_name='webhookendpoint',
            name='study',
            field=models.ForeignKey(default=studies.models.default_study_id, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='studies.study'),
        ),
    ]
