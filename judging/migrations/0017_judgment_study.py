"""Each judgment carries its item's study, so a study's votes are one index range.

Three steps so no row is ever without one: the column is added nullable, filled from the
judged item's instance (one UPDATE per kind of item), then made required; the study-first
index comes last, built once over the filled column.
"""

import django.db.models.deletion
from django.db import migrations, models

# Standard SQL (a correlated subquery): SQLite and PostgreSQL alike. PostgreSQL gets a join
# instead, which at millions of judgments is minutes faster.
PORTABLE = """
UPDATE judging_judgment SET study_id = (
    SELECT i.study_id FROM judging_{item} x JOIN annotation_instance i ON i.id = x.instance_id
    WHERE x.id = judging_judgment.{item}_id)
WHERE {item}_id IS NOT NULL
"""
POSTGRESQL = """
UPDATE judging_judgment j SET study_id = i.study_id
FROM judging_{item} x JOIN annotation_instance i ON i.id = x.instance_id
WHERE x.id = j.{item}_id
"""


def fill_study(apps, schema_editor):
    sql = POSTGRESQL if schema_editor.connection.vendor == "postgresql" else PORTABLE
    for item in ("comparison", "response"):
        schema_editor.execute(sql.format(item=item))
    if schema_editor.connection.vendor == "postgresql":
        # as in 0013: the new keys checked now, before the column is made required
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0021_prolific_screen_out_record'),
        ('judging', '0016_judgment_source_time_index'),
        ('studies', '0003_required_qualification'),
    ]

    operations = [
        migrations.AddField(
            model_name='judgment',
            name='study',
            field=models.ForeignKey(db_index=False, editable=False, null=True,
                                    on_delete=django.db.models.deletion.PROTECT,
                                    related_name='+', to='studies.study'),
        ),
        migrations.RunPython(fill_study, migrations.RunPython.noop),
        migrations.AlterField(
            model_name='judgment',
            name='study',
            field=models.ForeignKey(db_index=False, editable=False,
                                    on_delete=django.db.models.deletion.PROTECT,
                                    related_name='+', to='studies.study'),
        ),
        migrations.AddIndex(
            model_name='judgment',
            index=models.Index(fields=['study', 'source', 'created_at', 'id'],
                               name='judgment_study_time'),
        ),
    ]
