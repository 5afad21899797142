"""The newest judgment of one source in one index descent: the rating cache's key
(``judging.rating_cache``) is checked on every leaderboard view. Without it PostgreSQL walks
the primary key backwards past every newer judgment of other sources. Built concurrently on
PostgreSQL, so votes keep being written meanwhile."""
from django.db import migrations, models

from annotation.core.migration_ops import AddIndexConcurrently


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("judging", "0006_judgment_adjudication"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="judgment",
            index=models.Index(fields=["source", "id"], name="judgment_source_latest"),
        ),
    ]
