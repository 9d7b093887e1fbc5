"""Shared set-up for benchmarks: Django as production runs it (DEBUG off) on a throw-away database of the
process's own.

By default each benchmark process gets a fresh SQLite file in a temporary folder, so a benchmark never touches var/
or your data. BENCH_DATABASE_URL (e.g. a scratch PostgreSQL database) names the database to start from: each process
works on a copy of it made for it (CREATE DATABASE … TEMPLATE) and dropped when it ends, so one benchmark's rows
never weigh on another's figures there either. `python -m bench` migrates once and passes the migrated database in
BENCH_TEMPLATE_DB (a SQLite file, or the PostgreSQL database itself): each process copies it instead of migrating
again (migrating takes 10–20 s on the shared machine; the tiny runs in CI would spend most of their time on it).
"""

import atexit
import os
import shutil
import sqlite3
import tempfile
import time
from contextlib import contextmanager

_ready = False


def _scratch() -> str:
    scratch = tempfile.mkdtemp(prefix="portal-bench-")
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    return scratch


def configure(database_url: str, scratch: str) -> None:
    """The environment portal/settings.py reads, before django.setup()."""
    os.environ["PORTAL_VAR_DIR"] = scratch
    os.environ["DATABASE_URL"] = database_url
    # Production runs with DEBUG off: no query log kept in memory, templates and error pages as served. The test
    # client's "testserver" is in the default ALLOWED_HOSTS (only PORTAL_PRODUCTION empties it).
    os.environ["DEBUG"] = "False"
    # The pages' cache (portal/settings.py CACHE_URL) in this process only: "cold" empties it with cache.clear(),
    # which on a shared Redis would flush everyone's keys.
    os.environ["CACHE_URL"] = "locmem://"
    # Tasks a benchmark enqueues stay in its scratch folder (kombu's filesystem transport), never reach a broker
    # whose workers would run them against another database.
    os.environ["CELERY_BROKER_URL"] = "filesystem://localhost/"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")


def make_template() -> str:
    """Migrate the database the benchmarks start from; returns what to pass in BENCH_TEMPLATE_DB."""
    from django.core.management import call_command

    scratch = tempfile.mkdtemp(prefix="portal-bench-template-")
    url = os.environ.get("BENCH_DATABASE_URL") or f"sqlite:///{scratch}/template.sqlite3"
    configure(url, scratch)
    import django

    django.setup()
    call_command("migrate", verbosity=0)
    from django.db import connection

    name = connection.settings_dict["NAME"]
    connection.close()
    return str(name)


def setup() -> None:
    global _ready
    if _ready:
        return
    scratch = _scratch()
    template = os.environ.get("BENCH_TEMPLATE_DB")
    base = os.environ.get("BENCH_DATABASE_URL")
    if base:
        configure(base, scratch)  # the copy is made below, once Django can open a connection to the server
    else:
        path = f"{scratch}/bench.sqlite3"
        if template:
            copy_sqlite(template, path)
        configure(f"sqlite:///{path}", scratch)
    import django
    from django.core.management import call_command
    from django.db import connection

    django.setup()
    if base:
        name = f"{connection.settings_dict['NAME']}_{os.getpid()}"
        clone_database(connection.settings_dict["NAME"], name)
        use_database(name)
    if not template:
        call_command("migrate", verbosity=0)
    _ready = True


def copy_sqlite(source: str, target: str) -> None:
    """A consistent copy (its WAL included) through SQLite's backup API."""
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    src.close()
    dst.close()


def clone_database(source: str, target: str) -> str:
    """A copy of database `source` named `target` (a file path on SQLite), dropped when the process ends."""
    from django.db import connection

    connection.close()  # PostgreSQL copies a template only while nobody is connected to it
    if connection.vendor == "sqlite":
        copy_sqlite(source, target)
        return target
    with connection._nodb_cursor() as cursor:
        cursor.execute(f'CREATE DATABASE "{target}" TEMPLATE "{source}"')

    def drop() -> None:
        connection.close()
        with connection._nodb_cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{target}" WITH (FORCE)')

    atexit.register(drop)
    return target


def use_database(name: str) -> None:
    """Point the default connection at another database of the same server (or another SQLite file)."""
    from django.db import connection

    connection.close()
    connection.settings_dict["NAME"] = name


@contextmanager
def measured():
    """Yields a dict filled with wall time (ms) and SQL query count of the block.

    CaptureQueriesContext forces the debug cursor, so queries are counted with DEBUG off too; the count is taken
    before the time is stopped, so the log's cost is inside the figure, as it was with DEBUG on."""
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
