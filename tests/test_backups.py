"""Backups that are proven: `manage.py backup` of a portal holding the demo program, `manage.py restore`
into an empty database, and every figure is the same; SQLite's online backup while another connection writes; the
errors an operator meets are sentences, never tracebacks. On the test database's engine: PostgreSQL in CI (pg_dump,
pg_restore), SQLite locally by default."""

from __future__ import annotations

import sqlite3
import threading
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connections
from django.utils import timezone

from portal import backups
from portal.backups import BackupError, backup, manifest_path, read_manifest, restore
from tests.program_figures import program_figures
from tests.scratch_db import as_default, engine, scratch_database

DEMO = ("load_demo", "load_demo_workloads", "load_demo_usage", "load_demo_training")


def run(command: str, *args) -> str:
    out = StringIO()
    call_command(command, *args, stdout=out, stderr=out)
    return out.getvalue()


@pytest.mark.django_db(transaction=True)
def test_restore_into_an_empty_database_keeps_every_figure(tmp_path, catalog):
    for command in DEMO:
        run(command)
    as_of = timezone.now()
    before = program_figures(as_of=as_of)
    for figure in ("usage", "week summaries", "allocations", "audit trail", "training", "billed", "pool ledger"):
        assert before[figure], f"the demo program has no {figure}: the comparison would prove nothing"
    path = tmp_path / "portal.dump"

    said = run("backup", str(path))

    manifest = read_manifest(path)
    assert manifest.engine == engine() and manifest.tables["tenants_auditevent"] == len(before["audit trail"])
    assert f"{manifest.rows} rows" in said
    with scratch_database() as empty, as_default(empty):
        said = run("restore", str(path))
        assert "every table's count as in the backup" in said
        assert program_figures(as_of=as_of) == before
        # Restoring again over what is now there is refused, unless asked for.
        with pytest.raises(CommandError, match="not empty.*--replace"):
            run("restore", str(path))
        run("restore", str(path), "--replace")
        assert program_figures(as_of=as_of) == before


def _writer(path, stop: threading.Event, written: list[int], errors: list[BaseException]) -> None:
    """Another connection writing all along, in small transactions, as web and the workers do."""
    connection = sqlite3.connect(path, timeout=20)
    try:
        while not stop.is_set():
            with connection:
                connection.execute("INSERT INTO readings (payload) VALUES (randomblob(512))")
            written.append(1)
    except BaseException as error:  # noqa: BLE001 - the test reports it
        errors.append(error)
    finally:
        connection.close()


def test_sqlite_online_backup_while_another_connection_writes(tmp_path):
    live = tmp_path / "portal.sqlite3"
    connection = sqlite3.connect(live)
    connection.execute("PRAGMA journal_mode=WAL")  # as the portal's settings open it
    connection.execute("CREATE TABLE readings (id INTEGER PRIMARY KEY, payload BLOB)")
    with connection:
        connection.executemany("INSERT INTO readings (payload) VALUES (randomblob(512))", ([] for _ in range(20_000)))
    stop, written, errors = threading.Event(), [], []
    writer = threading.Thread(target=_writer, args=(live, stop, written, errors))
    writer.start()
    try:
        while len(written) < 20:  # the writer is under way before the copy starts
            threading.Event().wait(0.01)
        settings_dict = {"ENGINE": "django.db.backends.sqlite3", "NAME": str(live)}
        manifests = [backup(path=tmp_path / f"copy{n}.sqlite3", settings_dict=settings_dict) for n in range(3)]
        during = len(written)
    finally:
        stop.set()
        writer.join()
    assert not errors, errors
    assert len(written) > during > 20, "the writer went on writing while the copies were taken"
    counts = [m.tables["readings"] for m in manifests]
    assert 20_000 < counts[0] <= counts[1] <= counts[2] < 20_000 + len(written) + 1
    for n, manifest in enumerate(manifests):  # each copy holds exactly the rows its manifest counted, and is whole
        copy = sqlite3.connect(tmp_path / f"copy{n}.sqlite3")
        assert copy.execute("SELECT COUNT(*) FROM readings").fetchone()[0] == manifest.tables["readings"]
        assert copy.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # one file, no -wal beside it
        copy.close()
    target = {"ENGINE": "django.db.backends.sqlite3", "NAME": str(tmp_path / "restored.sqlite3")}
    assert restore(path=tmp_path / "copy2.sqlite3", settings_dict=target).tables == manifests[2].tables
    with pytest.raises(BackupError, match="not empty"):
        restore(path=tmp_path / "copy2.sqlite3", settings_dict=target)


def test_a_restore_that_differs_from_its_manifest_is_not_called_done(tmp_path):
    live = tmp_path / "portal.sqlite3"
    with sqlite3.connect(live) as connection:
        connection.execute("CREATE TABLE readings (id INTEGER PRIMARY KEY)")
        connection.execute("INSERT INTO readings DEFAULT VALUES")
    backup(path=tmp_path / "copy.sqlite3", settings_dict={"ENGINE": "django.db.backends.sqlite3", "NAME": str(live)})
    manifest = manifest_path(tmp_path / "copy.sqlite3")
    manifest.write_text(manifest.read_text().replace('"readings": 1', '"readings": 2'))
    target = {"ENGINE": "django.db.backends.sqlite3", "NAME": str(tmp_path / "restored.sqlite3")}
    with pytest.raises(BackupError, match="readings: 2 in the backup, 1 restored"):
        restore(path=tmp_path / "copy.sqlite3", settings_dict=target)


# A PostgreSQL that does not answer: nothing listens on port 1.
POSTGRES = connections.configure_settings(
    {"default": {"ENGINE": "django.db.backends.postgresql", "NAME": "portal", "HOST": "127.0.0.1", "PORT": "1"}}
)["default"]


def test_errors_are_sentences_not_tracebacks(tmp_path, monkeypatch, django_db_blocker):
    with pytest.raises(CommandError, match="There is no backup file"):
        run("restore", str(tmp_path / "missing.dump"))
    with pytest.raises(CommandError, match="is a folder"):
        run("backup", str(tmp_path))
    with pytest.raises(BackupError, match="is a sqlite backup and the database is postgresql"):
        live = tmp_path / "portal.sqlite3"
        sqlite3.connect(live).close()
        backup(path=tmp_path / "b.sqlite3", settings_dict={"ENGINE": "django.db.backends.sqlite3", "NAME": str(live)})
        restore(path=tmp_path / "b.sqlite3", settings_dict=POSTGRES)
    with pytest.raises(BackupError, match="Cannot connect to the database portal"), django_db_blocker.unblock():
        backup(path=tmp_path / "pg.dump", settings_dict=POSTGRES)
    assert not list(tmp_path.glob("pg.dump*")), "a failed backup leaves no file that looks like one"
    monkeypatch.setenv("PATH", str(tmp_path))  # no pg_dump, no pg_restore
    with pytest.raises(BackupError, match="pg_dump is not installed"):
        backup(path=tmp_path / "pg.dump", settings_dict=POSTGRES)


@pytest.mark.postgresql("pg_dump's version is checked against a PostgreSQL server")
def test_a_pg_dump_older_than_the_server_is_refused(tmp_path, monkeypatch, request):
    request.getfixturevalue("db")
    monkeypatch.setattr(backups, "_tool_version", lambda tool: "pg_dump (PostgreSQL) 9.6.24")
    server = connections["default"].pg_version // 10000
    with pytest.raises(BackupError, match=f"cannot dump a PostgreSQL {server} server.*postgresql-client-{server}"):
        backup(path=tmp_path / "pg.dump", settings_dict=connections["default"].settings_dict)
    assert not list(tmp_path.iterdir())
