"""The one rule for a test whose needs this machine may not meet (a program, a server, a library, PostgreSQL, an old
Python): skip where it is missing on a developer's machine, fail in CI (env CI set). .ci/run installs everything the
tests need, so there every such test runs or fails, never skips. Every skip in tests/ goes through here."""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import NoReturn

import pytest
from django.db import connection


def unavailable(reason: str) -> NoReturn:
    """What the test needs is missing: skip with `reason`, or in CI fail with it."""
    __tracebackhide__ = True  # the report names the caller's line, not this one
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI: this test must run, never skip)", pytrace=False)
    pytest.skip(reason)


def import_or_unavailable(name: str, reason: str) -> ModuleType:
    """pytest.importorskip under the rule above: the module, or a skip (a failure in CI) saying `reason`."""
    __tracebackhide__ = True
    try:
        return importlib.import_module(name)
    except ImportError as error:
        unavailable(f"{reason}: {error}")


def require_postgresql(why: str) -> None:
    """A PostgreSQL-only test (row locks, concurrent writers, pg_dump, PostgreSQL's SQL) on another engine."""
    __tracebackhide__ = True
    if connection.vendor != "postgresql":
        unavailable(f"{why}: needs PostgreSQL, the test database is {connection.vendor} (set DATABASE_URL)")
