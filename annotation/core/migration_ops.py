"""Migration operations that keep a live study writable while its tables change."""
from django.db.migrations.operations import AddIndex


class AddIndexConcurrently(AddIndex):
    """``CREATE INDEX CONCURRENTLY`` on PostgreSQL, so claims and submits go on while a large
    table is indexed (a plain CREATE INDEX blocks every write until it is built); a plain
    CREATE INDEX elsewhere. Its migration must say ``atomic = False``."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        model = to_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            schema_editor.add_index(model, self.index, **_concurrently(schema_editor))

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        model = from_state.apps.get_model(app_label, self.model_name)
        if self.allow_migrate_model(schema_editor.connection.alias, model):
            schema_editor.remove_index(model, self.index, **_concurrently(schema_editor))


def _concurrently(schema_editor) -> dict:
    return {"concurrently": True} if schema_editor.connection.vendor == "postgresql" else {}
