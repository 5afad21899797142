"""At most one lease per worker and batch, held by a partial unique index (issue 14).

A database written before this may hold several live leases of one worker in one batch (their
concurrent claims raced past the live-lease check). For each such pair the newest lease stays
and the others are expired, giving their slots back, as the periodic sweep does; a later
submit of one follows the late rule. Then the unique index is built (concurrently on
PostgreSQL, so claims and submits go on meanwhile) and replaces the plain live-lease index,
which it makes redundant.

Old code still serving during the deploy can write a new duplicate between the two steps; the
index build then fails and ``migrate`` must be run again (it repeats both steps, and first
drops the invalid index a failed concurrent build leaves behind).
"""

from django.db import migrations, models
from django.db.models import Count, F

LEASED, EXPIRED = "leased", "expired"


def expire_all_but_the_newest_lease(apps, schema_editor):
    Assignment = apps.get_model("annotation", "Assignment")
    Task = apps.get_model("annotation", "Task")
    pairs = (Assignment.objects.filter(status=LEASED).values("batch_id", "worker_id")
             .annotate(leases=Count("pk")).filter(leases__gt=1))
    for pair in list(pairs):
        leases = list(Assignment.objects.select_for_update()
                      .filter(status=LEASED, batch_id=pair["batch_id"], worker_id=pair["worker_id"])
                      .order_by("-expires_at", "-pk").values_list("pk", "task_id"))
        extra = leases[1:]  # rows locked, so each flips once; (task, worker) is unique
        Assignment.objects.filter(pk__in=[pk for pk, _ in extra]).update(status=EXPIRED)
        Task.objects.filter(pk__in=[task for _, task in extra]).update(
            slots_taken=F("slots_taken") - 1)


class AddConstraintConcurrently(migrations.AddConstraint):
    """A partial unique constraint as ``CREATE UNIQUE INDEX CONCURRENTLY`` on PostgreSQL (the
    constraint counterpart of ``annotation.core.migration_ops.AddIndexConcurrently``), after dropping
    an invalid index an earlier failed build left; as usual elsewhere. Needs ``atomic = False``."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor != "postgresql":
            return super().database_forwards(app_label, schema_editor, from_state, to_state)
        model = to_state.apps.get_model(app_label, self.model_name)
        if not self.allow_migrate_model(schema_editor.connection.alias, model):
            return
        schema_editor.execute(
            schema_editor._delete_index_sql(model, self.constraint.name, concurrently=True))
        statement = self.constraint.create_sql(model, schema_editor)
        plain = schema_editor.sql_create_unique_index
        assert statement.template == plain, "Django changed how it writes a partial unique index"
        statement.template = plain.replace("CREATE UNIQUE INDEX ", "CREATE UNIQUE INDEX CONCURRENTLY ", 1)
        schema_editor.execute(statement, params=None)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor != "postgresql":
            return super().database_backwards(app_label, schema_editor, from_state, to_state)
        model = to_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            schema_editor.execute(
                schema_editor._delete_index_sql(model, self.constraint.name, concurrently=True))


class RemoveIndexConcurrently(migrations.RemoveIndex):
    """``DROP INDEX CONCURRENTLY`` on PostgreSQL (a plain DROP INDEX waits for, then blocks,
    every claim and submit on the table); as usual elsewhere. Needs ``atomic = False``."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        model = from_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            index = from_state.models[app_label, self.model_name_lower].get_index_by_name(self.name)
            schema_editor.remove_index(model, index, **_concurrently(schema_editor))

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        model = to_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            index = to_state.models[app_label, self.model_name_lower].get_index_by_name(self.name)
            schema_editor.add_index(model, index, **_concurrently(schema_editor))


def _concurrently(schema_editor) -> dict:
    return {"concurrently": True} if schema_editor.connection.vendor == "postgresql" else {}


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ('annotation', '0005_reference_convention'),
    ]

    operations = [
        migrations.RunPython(expire_all_but_the_newest_lease, migrations.RunPython.noop,
                             atomic=True),
        AddConstraintConcurrently(
            model_name='assignment',
            constraint=models.UniqueConstraint(condition=models.Q(('status', 'leased')), fields=('worker', 'batch'), name='one_lease_per_worker_and_batch'),
        ),
        RemoveIndexConcurrently(
            model_name='assignment',
            name='live_lease_by_worker',
        ),
    ]
