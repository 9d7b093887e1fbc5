"""Migrations that a rolling deploy survives: django-migration-linter reads the SQL each migration of
ours runs on PostgreSQL (production's engine) and fails the build on one that breaks the version still running
beside it — a NOT NULL column it does not write, a dropped or renamed column or table, a new unique constraint —
or that locks a table for as long as an index takes to build (CREATE/DROP INDEX without CONCURRENTLY).

The migrations written before the linter ran are listed in BASELINE with what it finds: they are applied everywhere
and are not rewritten. A new migration goes there only as a reviewed exception, its comment saying why it is safe
(e.g. the table is new in this release and still empty). Not the linter's IgnoreMigration: a migration importing
the linter would fail in the production image, which installs only requirements.txt.
docs/operations/upgrades.md says how to run it and how to write the migrations it accepts.
"""

from __future__ import annotations

from contextlib import redirect_stdout
from io import StringIO
from textwrap import dedent

import pytest
from django_migration_linter import MigrationLinter

APPS = ("tenants", "workloads")
# The linter reports these as warnings by default; a lock held on a large table while the old version serves
# requests is an outage, so here they fail too. (CREATE_INDEX_EXCLUSIVE, an index built in the transaction of an
# ALTER TABLE, stays a warning: it matters only where CREATE_INDEX is already accepted.)
LOCKS = ["CREATE_INDEX", "DROP_INDEX", "REINDEX"]

# What the linter finds in the migrations that predate it (2026-11-28): applied wherever the portal runs, so
# rewriting them would change nothing there. New migrations follow docs/operations/upgrades.md instead.
BASELINE = {
    ("tenants", "0006_api_tokens"): "DROPPING table",  # the first token table, replaced in the same migration
    ("tenants", "0007_program_idle_threshold"): "NOT NULL",
    ("tenants", "0010_list_indexes"): "INDEX locks table",
    ("tenants", "0012_organization_language"): "NOT NULL",
    ("tenants", "0013_instance_type_ranks"): "NOT NULL",
    ("workloads", "0007_usage"): "INDEX locks table",
    ("workloads", "0011_usage_interval_end_index"): "INDEX locks table",
    ("workloads", "0012_self_healing"): "NOT NULL",
    ("workloads", "0014_jobs_health_validation"): "NOT NULL",
    ("workloads", "0016_case_node"): "INDEX locks table",
    ("workloads", "0018_cluster_claim_lease"): "NOT NULL",
    ("workloads", "0019_job_sort_indexes"): "INDEX locks table",
    ("workloads", "0020_billed_day_index"): "INDEX locks table",
    ("workloads", "0021_nccl_collective"): "NOT NULL",
    ("workloads", "0022_dcgm_unsupported"): "NOT NULL",
    ("workloads", "0025_jobs_accelerators_source"): "NOT NULL",
    ("workloads", "0027_usage_summaries"): "INDEX locks table",
    ("workloads", "0028_landing_reads"): "INDEX locks table",
    # Reviewed exception: widening varchar(255) to varchar(1024) (long SAML identifiers) rewrites nothing on
    # PostgreSQL (a catalog change), and the version still running writes only shorter values.
    ("tenants", "0018_identity"): "ALTERING columns",
}


# The linter reads PostgreSQL's SQL (production's engine).
on_postgresql = pytest.mark.postgresql("the linter reads PostgreSQL's SQL")


def lint(apps) -> dict[tuple[str, str], str]:
    """The migrations of `apps` the linter fails, with what it printed about each."""
    linter = MigrationLinter(no_cache=True, warnings_as_errors_tests=LOCKS)
    flagged = {}
    for key, migration in sorted(linter.migration_loader.disk_migrations.items()):
        if key[0] not in apps:
            continue
        said, before = StringIO(), linter.nb_erroneous
        with redirect_stdout(said):
            linter.lint_migration(migration)
        if linter.nb_erroneous > before:
            flagged[key] = said.getvalue()
    return flagged


@on_postgresql
def test_no_migration_breaks_a_rolling_deploy_or_locks_a_table(transactional_db):
    # Outside a transaction: sqlmigrate refuses to collect a concurrent index build (atomic = False) inside one.
    flagged = lint(APPS)
    new = {key: said for key, said in flagged.items() if key not in BASELINE}
    assert not new, "migrations the running version would not survive, or that lock a table:\n" + "".join(new.values())
    for key, finding in BASELINE.items():
        # A baseline entry the linter no longer flags (the migration was squashed or fixed) goes: the list only shrinks.
        assert key in flagged, f"{key} passes the linter now: remove it from BASELINE"
        assert finding in flagged[key], flagged[key]


# A small app of its own with the migrations the linter must stop, and two it must let through.
PROBE = {
    "0001_initial": """
        operations = [migrations.CreateModel("Reading", [
            ("id", models.BigAutoField(primary_key=True)), ("name", models.CharField(max_length=20))])]""",
    "0002_not_null_without_default": """
        operations = [migrations.AddField("reading", "value", models.IntegerField(default=0))]""",
    "0003_rename_column": """
        operations = [migrations.RenameField("reading", "name", "title")]""",
    "0004_index_locking_the_table": """
        operations = [migrations.AddIndex("reading", models.Index(fields=["value"], name="reading_value"))]""",
    "0005_nullable_column": """
        operations = [migrations.AddField("reading", "note", models.TextField(null=True))]""",
    "0006_index_concurrently": """
        atomic = False
        operations = [AddIndexConcurrently("reading", models.Index(fields=["note"], name="reading_note"))]""",
}


@pytest.fixture
def probe_app(tmp_path, monkeypatch, settings):
    package = tmp_path / "lintprobe"
    (package / "migrations").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "migrations" / "__init__.py").write_text("")
    previous = None
    for name, body in PROBE.items():
        depends = f"[('lintprobe', '{previous}')]" if previous else "[]"
        source = (
            (
                "from django.contrib.postgres.operations import AddIndexConcurrently\n"
                "from django.db import migrations, models\n\n\n"
                f"class Migration(migrations.Migration):\n    dependencies = {depends}\n{dedent(body).rstrip()}\n"
            )
            .replace("\noperations", "\n    operations")
            .replace("\natomic", "\n    atomic")
        )
        (package / "migrations" / f"{name}.py").write_text(source)
        previous = name
    monkeypatch.syspath_prepend(str(tmp_path))
    settings.INSTALLED_APPS = [*settings.INSTALLED_APPS, "lintprobe"]
    return "lintprobe"


@on_postgresql
def test_the_linter_stops_what_a_rolling_deploy_would_not_survive(probe_app, transactional_db):
    # transactional_db: a migration with atomic = False (CONCURRENTLY) cannot even be printed inside a transaction.
    flagged = lint({probe_app})
    assert set(flagged) == {
        ("lintprobe", "0002_not_null_without_default"),
        ("lintprobe", "0003_rename_column"),
        ("lintprobe", "0004_index_locking_the_table"),
    }, flagged
    assert "NOT NULL constraint" in flagged[("lintprobe", "0002_not_null_without_default")]
    assert "RENAMING columns" in flagged[("lintprobe", "0003_rename_column")]
    assert "CREATE INDEX locks table" in flagged[("lintprobe", "0004_index_locking_the_table")]
