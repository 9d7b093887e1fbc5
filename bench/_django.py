"""Shared set-up for benchmarks: Django on a throw-away database, migrated once per process.

BENCH_DATABASE_URL picks the database (e.g. a scratch PostgreSQL database); by default a fresh
SQLite file in a temporary folder, so a benchmark never touches var/ or your data.
"""

import os
import tempfile
import time
from contextlib import contextmanager

_ready = False


def setup() -> None:
    global _ready
    if _ready:
        return
    scratch = tempfile.mkdtemp(prefix="portal-bench-")
    os.environ["PORTAL_VAR_DIR"] = scratch
    os.environ["DATABASE_URL"] = os.environ.get("BENCH_DATABASE_URL", f"sqlite:///{scratch}/bench.sqlite3")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    _ready = True


@contextmanager
def measured():
    """Yields a dict filled with wall time (ms) and SQL query count of the block."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    result: dict = {}
    # The query log keeps the last 9,000: full from an earlier benchmark in this process, it would count 0.
    connection.queries_log.clear()
    with CaptureQueriesContext(connection) as ctx:
        start = time.perf_counter()
        yield result
        result["ms"] = (time.perf_counter() - start) * 1000
    result["queries"] = len(ctx.captured_queries)


def median_get(client, url: str, repeat: int) -> dict:
    """`repeat` GETs of a page that must answer 200: the median wall time (ms) and the last run's queries."""
    import statistics

    runs = []
    for _ in range(repeat):
        with measured() as m:
            response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        runs.append(m)
    return {"ms": statistics.median(r["ms"] for r in runs), "queries": runs[-1]["queries"]}
