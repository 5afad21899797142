"""Running a data migration in a test: migrate to a state, make rows with that state's models,
migrate on, and leave the database fully migrated afterwards (``back_to_latest``)."""
import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate_to(targets):
    """Migrate to ``targets`` ([(app, migration)]) and return that state's apps registry."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.fixture
def back_to_latest():
    """Leave the database fully migrated for the tests that follow."""
    yield
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
