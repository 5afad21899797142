# Partial indexes for the next-task claim and the live-lease lookup; built concurrently on
# PostgreSQL so a running study keeps taking submissions meanwhile.

from django.db import migrations, models

from annotation.core.migration_ops import AddIndexConcurrently


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ('annotation', '0003_content_pipeline_and_providers'),
    ]

    operations = [
        AddIndexConcurrently(
            model_name='assignment',
            index=models.Index(condition=models.Q(('status', 'leased')), fields=['worker', 'batch'], name='live_lease_by_worker'),
        ),
        AddIndexConcurrently(
            model_name='task',
            index=models.Index(condition=models.Q(('slots_taken__lt', models.F('max_assignments'))), fields=['batch', 'position'], name='open_task_order'),
        ),
        migrations.RemoveIndex(
            model_name='task',
            name='annotation__batch_i_c38460_idx',
        ),
    ]
