"""Migration operations that a rolling deploy survives on PostgreSQL and that still run on SQLite (`make run`):
an index built CONCURRENTLY there (no write lock for the whole build, docs/operations/upgrades.md), plainly here.
A migration using them sets `atomic = False` (PostgreSQL builds a concurrent index outside a transaction)."""

from django.contrib.postgres.operations import AddIndexConcurrently as _AddIndexConcurrently
from django.db import migrations


class AddIndexConcurrently(_AddIndexConcurrently):
    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            return super().database_forwards(app_label, schema_editor, from_state, to_state)
        return migrations.AddIndex.database_forwards(self, app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            return super().database_backwards(app_label, schema_editor, from_state, to_state)
        return migrations.AddIndex.database_backwards(self, app_label, schema_editor, from_state, to_state)


def create_index_sql(sql: str, *, name: str) -> migrations.RunPython:
    """`CREATE [UNIQUE] INDEX <name> ON …` given as `sql` without CONCURRENTLY: run concurrently on PostgreSQL,
    plainly on SQLite; dropped the same way backwards. For an index Django's operations cannot say (one on another
    app's table, an expression)."""

    def forwards(apps, schema_editor):
        concurrently = "CONCURRENTLY " if schema_editor.connection.vendor == "postgresql" else ""
        schema_editor.execute(sql.replace(" INDEX ", f" INDEX {concurrently}IF NOT EXISTS ", 1))

    def backwards(apps, schema_editor):
        concurrently = "CONCURRENTLY " if schema_editor.connection.vendor == "postgresql" else ""
        schema_editor.execute(f"DROP INDEX {concurrently}IF EXISTS {name}")

    return migrations.RunPython(forwards, backwards, elidable=False)
