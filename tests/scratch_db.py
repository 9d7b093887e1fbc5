"""Databases of a test's own beside the test database (same engine: PostgreSQL in CI, SQLite by default locally),
and Django's default connection pointed at one for a while: where the backup tests restore into an empty database
and the upgrade test builds a database at an old schema. Only for tests that hold no transaction open on the
default connection (transactional tests, or tests with no database fixture)."""

from __future__ import annotations

import secrets
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.core.cache import cache
from django.db import connections

from tests.environment import unavailable


def engine() -> str:
    return connections["default"].vendor  # "postgresql" or "sqlite"


@contextmanager
def scratch_database() -> Iterator[dict]:
    """The settings of a new, empty database (a copy of the default's with another NAME), dropped at the end."""
    settings_dict = dict(connections["default"].settings_dict)
    if engine() == "sqlite":
        with tempfile.TemporaryDirectory(prefix="portal-scratch-") as folder:
            yield {**settings_dict, "NAME": str(Path(folder) / "scratch.sqlite3")}
        return
    import psycopg

    name = f"scratch_{secrets.token_hex(4)}"
    conninfo = {
        "dbname": "postgres",
        "host": settings_dict.get("HOST") or None,
        "port": settings_dict.get("PORT") or None,
        "user": settings_dict.get("USER") or None,
        "password": settings_dict.get("PASSWORD") or None,
    }
    try:
        admin = psycopg.connect(**{k: v for k, v in conninfo.items() if v}, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as error:
        unavailable(f"cannot create a database beside the test database: {error}")
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield {**settings_dict, "NAME": name}
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def as_default(settings_dict: dict) -> Iterator[None]:
    """Django's default connection (every model, service and figure) reads `settings_dict`'s database in the
    block; the cache is emptied on the way in and out so that no figure comes from the other database."""
    connection = connections["default"]
    saved = connection.settings_dict
    connection.close()
    connection.settings_dict = settings_dict
    cache.clear()
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict = saved
        cache.clear()
