"""Backing up the portal's database and restoring it: `manage.py backup PATH` and `manage.py restore PATH`.

PostgreSQL: `pg_dump --format=custom`, restored by `pg_restore` in one transaction (all or nothing). SQLite (the
embedded default): the sqlite3 module's online backup, a consistent copy taken while web, worker and beat go on
writing (WAL: the copy reads one snapshot, the writers never wait for it).

Beside each backup a manifest (PATH.json) lists every table's row count *in the backup's own snapshot* (PostgreSQL:
counted in the transaction whose snapshot pg_dump is handed; SQLite: counted in the copy) and the migrations applied.
A restore counts the rows again and refuses to call a restore done when one table differs, so every restore is also
a test of the backup. docs/operations/backups.md is the operator's side of this.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from django.db import DatabaseError, connections
from django.db.backends.postgresql.client import DatabaseClient
from django.db.migrations.loader import MigrationLoader
from django.db.utils import load_backend

FORMAT = 1  # of the manifest
ENGINES = {"django.db.backends.postgresql": "postgresql", "django.db.backends.sqlite3": "sqlite"}
TOOL_TIMEOUT = 6 * 3600  # seconds: a large dump takes long, a hung one should still end


class BackupError(Exception):
    """A backup or restore that cannot go on, in words for the operator (the commands print it, no traceback)."""


@dataclass
class Manifest:
    engine: str
    database: str  # the name it was taken from: for the operator, never used to pick a target
    created_at: str
    tables: dict[str, int]  # table -> rows, in the backup's snapshot
    migrations: list[str] = field(default_factory=list)  # "app.name" of every migration applied
    server_version: str = ""  # PostgreSQL only: the server and pg_dump that made it
    tool_version: str = ""
    format: int = FORMAT

    @property
    def rows(self) -> int:
        return sum(self.tables.values())


def manifest_path(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def engine_of(settings_dict: dict) -> str:
    try:
        return ENGINES[settings_dict["ENGINE"]]
    except KeyError:
        raise BackupError(f"Backups cover PostgreSQL and SQLite, not {settings_dict['ENGINE']}.") from None


# --- Both engines ----------------------------------------------------------------------------------------------


@contextmanager
def _wrapper(settings_dict: dict) -> Iterator:
    """A connection of its own to the database `settings_dict` describes (not the thread's shared one: a backup's
    transaction must not mix with the caller's), closed at the end."""
    wrapper = load_backend(settings_dict["ENGINE"]).DatabaseWrapper(settings_dict, alias="__backups__")
    try:
        try:
            wrapper.ensure_connection()
        except DatabaseError as error:
            raise BackupError(f"Cannot connect to the database {settings_dict['NAME']}: {error}") from None
        yield wrapper
    finally:
        wrapper.close()


def _count_rows(wrapper, cursor) -> dict[str, int]:
    counts = {}
    for table in sorted(wrapper.introspection.table_names(cursor)):
        cursor.execute(f"SELECT COUNT(*) FROM {wrapper.ops.quote_name(table)}")  # noqa: S608 - names from the catalog
        counts[table] = cursor.fetchone()[0]
    return counts


def _applied(cursor, tables: dict[str, int]) -> list[str]:
    if "django_migrations" not in tables:
        return []
    cursor.execute("SELECT app, name FROM django_migrations ORDER BY app, name")
    return [f"{app}.{name}" for app, name in cursor.fetchall()]


def _sqlite_counts(connection: sqlite3.Connection) -> dict[str, int]:
    """Counted on a plain sqlite3 connection: Django's would switch a backup copy to WAL (its init_command)."""
    tables = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    return {
        table: connection.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0]  # noqa: S608 - from the catalog
        for (table,) in sorted(tables.fetchall())
    }


def table_counts(settings_dict: dict) -> dict[str, int]:
    """Every table's rows in the database, as a restore compares them with the manifest."""
    if engine_of(settings_dict) == "sqlite":
        with closing_sqlite(_sqlite_file(settings_dict)) as connection:
            return _sqlite_counts(connection)
    with _wrapper(settings_dict) as wrapper, wrapper.cursor() as cursor:
        return _count_rows(wrapper, cursor)


def _write_manifest(path: Path, manifest: Manifest) -> None:
    partial = manifest_path(path).with_suffix(".partial")
    partial.write_text(json.dumps(asdict(manifest), indent=1, sort_keys=True) + "\n")
    os.replace(partial, manifest_path(path))


def read_manifest(path: Path) -> Manifest | None:
    try:
        data = json.loads(manifest_path(path).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise BackupError(f"{manifest_path(path)} is not a backup manifest: {error}") from None
    if data.get("format") != FORMAT:
        raise BackupError(f"{manifest_path(path)} is a manifest of format {data.get('format')}, not {FORMAT}.")
    return Manifest(**data)


def unknown_migrations(manifest: Manifest) -> list[str]:
    """Migrations the backup's database had applied that this version of the portal does not have: the backup was
    taken by a newer version, whose code the restored database needs."""
    on_disk = {f"{app}.{name}" for app, name in MigrationLoader(None, ignore_no_migrations=True).disk_migrations}
    return sorted(set(manifest.migrations) - on_disk)


def _compare(expected: Manifest, found: dict[str, int]) -> None:
    differ = {
        table: (expected.tables.get(table), found.get(table))
        for table in sorted(set(expected.tables) | set(found))
        if expected.tables.get(table) != found.get(table)
    }
    if differ:
        lines = "\n".join(f"  {table}: {was} in the backup, {now} restored" for table, (was, now) in differ.items())
        raise BackupError(f"The restored database differs from the backup's manifest:\n{lines}")


def backup(*, path: Path, settings_dict: dict) -> Manifest:
    """Write a backup of the database to `path` and its manifest beside it. Either both are complete or neither is
    there: each is written under another name first."""
    engine = engine_of(settings_dict)
    path = Path(path)
    if path.is_dir():
        raise BackupError(f"{path} is a folder: name the backup file, e.g. {path / 'portal.dump'}")
    if not path.parent.is_dir():
        raise BackupError(f"There is no folder {path.parent} to write the backup in.")
    partial = path.with_name(path.name + ".partial")
    try:
        manifest = (
            _backup_postgresql(partial, settings_dict)
            if engine == "postgresql"
            else _backup_sqlite(partial, settings_dict)
        )
        os.replace(partial, path)
    finally:
        with suppress(FileNotFoundError):
            partial.unlink()
    _write_manifest(path, manifest)
    return manifest


def restore(*, path: Path, settings_dict: dict, replace: bool = False) -> Manifest | None:
    """Restore the backup at `path` into the database `settings_dict` describes, which must be empty unless
    `replace`; then count every table's rows against the manifest (BackupError when one differs). Returns the
    manifest (None when there was none to check against)."""
    engine = engine_of(settings_dict)
    path = Path(path)
    if not path.is_file():
        raise BackupError(f"There is no backup file {path}.")
    manifest = read_manifest(path)
    if manifest is not None and manifest.engine != engine:
        raise BackupError(
            f"{path} is a {manifest.engine} backup and the database is {engine}: restore it into {manifest.engine}."
        )
    if engine == "postgresql":
        _restore_postgresql(path, settings_dict, replace=replace)
    else:
        _restore_sqlite(path, settings_dict, replace=replace)
    if manifest is not None:
        _compare(manifest, table_counts(settings_dict))
    return manifest


def _refuse_non_empty(tables: list[str], name: str, replace: bool) -> None:
    if tables and not replace:
        raise BackupError(
            f"The database {name} is not empty ({len(tables)} tables, e.g. {', '.join(sorted(tables)[:3])}). Restore "
            "into an empty database, or pass --replace to drop what it holds (back it up first)."
        )


# --- PostgreSQL ------------------------------------------------------------------------------------------------


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise BackupError(
            f"{name} is not installed: it comes with PostgreSQL's client programs (Debian: apt-get install "
            "postgresql-client), of the server's major version or newer."
        )
    return found


def _major(version: str) -> int:
    match = re.search(r"(\d+)(?:\.\d+)?", version)
    if match is None:
        raise BackupError(f"Cannot read a PostgreSQL version from {version!r}.")
    return int(match.group(1))


def _tool_version(tool: str) -> str:
    done = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=30)  # noqa: S603
    return done.stdout.strip()


def _pg_env(settings_dict: dict) -> dict[str, str]:
    """libpq's environment for pg_dump and pg_restore: the password never on a command line."""
    _args, env = DatabaseClient.settings_to_cmd_args_env(settings_dict, [])
    env = {**os.environ, **(env or {})}
    for key, variable in (("HOST", "PGHOST"), ("PORT", "PGPORT"), ("USER", "PGUSER"), ("NAME", "PGDATABASE")):
        if settings_dict.get(key):
            env[variable] = str(settings_dict[key])
    return env


def _run(command: list[str], env: dict[str, str], what: str) -> None:
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=TOOL_TIMEOUT)  # noqa: S603
    except subprocess.TimeoutExpired:
        raise BackupError(f"{what} took longer than {TOOL_TIMEOUT // 3600} hours and was stopped.") from None
    if done.returncode != 0:
        raise BackupError(f"{what} failed (exit {done.returncode}):\n{done.stderr.strip()}")


def _backup_postgresql(partial: Path, settings_dict: dict) -> Manifest:
    pg_dump = _tool("pg_dump")
    tool_version = _tool_version(pg_dump)
    with _wrapper(settings_dict) as wrapper:
        server = wrapper.pg_version // 10000
        if _major(tool_version) < server:
            raise BackupError(
                f"{tool_version} cannot dump a PostgreSQL {server} server: install the client programs of "
                f"PostgreSQL {server} or newer (Debian: postgresql-client-{server})."
            )
        with wrapper.cursor() as cursor:
            # One snapshot for the counts and the dump: pg_dump is handed this transaction's snapshot, so the
            # manifest counts exactly the rows the dump holds while web and the workers go on writing.
            cursor.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                cursor.execute("SELECT pg_export_snapshot()")
                snapshot = cursor.fetchone()[0]
                tables = _count_rows(wrapper, cursor)
                migrations = _applied(cursor, tables)
                _run(
                    [pg_dump, "--format=custom", f"--snapshot={snapshot}", "--no-password", f"--file={partial}"],
                    _pg_env(settings_dict),
                    "pg_dump",
                )
            finally:
                cursor.execute("COMMIT")
        server_version = wrapper.pg_version
    return Manifest(
        engine="postgresql",
        database=settings_dict["NAME"],
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        tables=tables,
        migrations=migrations,
        server_version=f"{server_version // 10000}.{server_version % 10000}",
        tool_version=tool_version,
    )


def _restore_postgresql(path: Path, settings_dict: dict, *, replace: bool) -> None:
    pg_restore = _tool("pg_restore")
    with _wrapper(settings_dict) as wrapper, wrapper.cursor() as cursor:
        _refuse_non_empty(wrapper.introspection.table_names(cursor), settings_dict["NAME"], replace)
    # One transaction: a restore that fails half way leaves the database as it was. No owners or grants: the
    # target's user owns what it restores, whoever owned it where the backup was taken.
    command = [pg_restore, "--single-transaction", "--exit-on-error", "--no-owner", "--no-privileges", "--no-password"]
    if replace:
        command += ["--clean", "--if-exists"]
    _run([*command, f"--dbname={settings_dict['NAME']}", str(path)], _pg_env(settings_dict), "pg_restore")


# --- SQLite ----------------------------------------------------------------------------------------------------


def _sqlite_file(settings_dict: dict) -> Path:
    name = str(settings_dict["NAME"])
    if name == ":memory:" or name.startswith("file:"):
        raise BackupError(f"The SQLite database {name} is not a file: there is nothing to back up or restore into.")
    return Path(name)


def _backup_sqlite(partial: Path, settings_dict: dict) -> Manifest:
    source = _sqlite_file(settings_dict)
    if not source.is_file():
        raise BackupError(f"There is no SQLite database at {source}.")
    # The whole copy in one step (pages=-1): it reads one snapshot. In WAL mode the writers go on meanwhile; copied
    # in steps, every write between two steps would start the copy again.
    with closing_sqlite(source, timeout=20) as live, closing_sqlite(partial) as copy:
        live.backup(copy)
        # One self-contained file (no -wal beside it), checked before it is called a backup.
        copy.execute("PRAGMA journal_mode=DELETE")
        problem = copy.execute("PRAGMA quick_check").fetchone()[0]
        if problem != "ok":
            raise BackupError(f"The copy of {source} fails SQLite's check: {problem}")
        tables = _sqlite_counts(copy)
        migrations = _applied(copy.cursor(), tables)
    return Manifest(
        engine="sqlite",
        database=str(source),
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        tables=tables,
        migrations=migrations,
        tool_version=f"SQLite {sqlite3.sqlite_version}",
    )


def _restore_sqlite(path: Path, settings_dict: dict, *, replace: bool) -> None:
    target = _sqlite_file(settings_dict)
    if not target.parent.is_dir():
        raise BackupError(f"There is no folder {target.parent} for the database {target}.")
    with closing_sqlite(path) as backup_file:
        try:
            problem = backup_file.execute("PRAGMA quick_check").fetchone()[0]
        except sqlite3.DatabaseError as error:
            raise BackupError(f"{path} is not an SQLite backup: {error}") from None
        if problem != "ok":
            raise BackupError(f"{path} fails SQLite's check: {problem}")
        with closing_sqlite(target, timeout=20) as live:
            _refuse_non_empty(list(_sqlite_counts(live)), str(target), replace)
            # Page by page into the live file, under SQLite's locks: a reader never sees half of it.
            backup_file.backup(live)


@contextmanager
def closing_sqlite(path: Path, **options) -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(path, **options)
    try:
        yield connection
    finally:
        connection.close()


def database_settings(alias: str) -> dict:
    """The settings of a configured database (manage.py's --database)."""
    if alias not in connections:
        raise BackupError(f"No database {alias!r} in DATABASES.")
    return connections[alias].settings_dict
