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


def bench_program():
    """The benchmarks' program (2030-01-01 to 2030-07-01) with three pools of 100,000 instances each: p5.48xlarge
    in us-east-1 and ap-northeast-1, trn1.32xlarge in us-east-1. Returns (program, pools)."""
    from datetime import date

    from tenants.models import CapacityPool, InstanceType, Program, Region

    program = Program.objects.create(name="Bench", slug="bench", starts_on=date(2030, 1, 1), ends_on=date(2030, 7, 1))
    types = {t.api_name: t for t in InstanceType.objects.all()}
    pools = [
        CapacityPool.objects.create(
            program=program,
            instance_type=types[name],
            region=region,
            total_instances=100_000,
            starts_on=program.starts_on,
            ends_on=program.ends_on,
        )
        for name, region in (
            ("p5.48xlarge", Region.US_EAST_1),
            ("p5.48xlarge", Region.AP_NORTHEAST_1),
            ("trn1.32xlarge", Region.US_EAST_1),
        )
    ]
    return program, pools
