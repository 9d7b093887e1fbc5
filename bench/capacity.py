"""Capacity pages and API at 1,000 / 10,000 / 50,000 rows: wall time and SQL queries per request, the ratio of
each target's time at 50,000 to its time at 1,000 (goal: within 1.5×, queries constant), and approving one
request (pool lock, invariant check on the ledger, allocation, ledger update) at each size: its time and its SQL
queries, counted by the same helper as the pages' (bench/_django.measured) and held to the same goals.

2,000 organizations; at each size, that many submitted requests (submitted over the program's first months)
and that many allocations spread over three pools and the six-month program; the pool ledger is rebuilt after
each bulk load (bulk inserts skip the model signals that keep it). BENCH_DATABASE_URL runs it on PostgreSQL,
with ANALYZE after each load.
"""

import random
import statistics
from datetime import UTC, date, datetime, timedelta

from bench._django import bench_program, measured, median_get, setup
from bench._report import record, tiny

SIZES = tiny((1_000, 10_000, 50_000), (30, 60))
ORGS = tiny(2_000, 10)
REPEAT = tiny(5, 1)
RATIO_GOAL = 1.5


def build(size: int, rng: random.Random, orgs, pools, user) -> None:
    """Grow the tables to `size` requests and allocations (sizes grow, so each load adds the difference)."""
    from django.db import connection

    from tenants.capacity import ledger
    from tenants.models import Allocation, CapacityRequest

    start = pools[0].starts_on
    have = Allocation.objects.count()
    requests, allocations = [], []
    for i in range(have, size):
        pool = pools[i % len(pools)]
        first = start + timedelta(days=rng.randrange(150))
        last = first + timedelta(days=rng.randrange(7, 30))
        org = orgs[rng.randrange(len(orgs))]
        submitted = datetime(2029, 10, 1, tzinfo=UTC) + timedelta(minutes=rng.randrange(180 * 24 * 60))
        requests.append(
            CapacityRequest(
                organization=org, pool=pool, instance_count=rng.randrange(1, 9), starts_on=first, ends_on=last,
                justification="bench", parameter_count=(7 * 10**9 if i % 2 else None),
                status=CapacityRequest.Status.SUBMITTED, created_by=user, submitted_at=submitted,
            )
        )  # fmt: skip
        allocations.append(
            Allocation(organization=org, pool=pool, instance_count=rng.randrange(1, 9), starts_on=first, ends_on=last)
        )
    CapacityRequest.objects.bulk_create(requests, batch_size=2_000)
    Allocation.objects.bulk_create(allocations, batch_size=2_000)
    ledger.rebuild()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


def time_approval(pool, org, manager) -> tuple[float, int]:
    """Milliseconds to approve one small submitted request in the pool (median of REPEAT) and the last approval's
    SQL queries, each rolled back."""
    from django.db import transaction

    from tenants.capacity.decisions import approve_request
    from tenants.models import CapacityRequest

    runs = []
    for _ in range(REPEAT):
        with transaction.atomic():
            request = CapacityRequest.objects.create(
                organization=org, pool=pool, instance_count=1, starts_on=date(2030, 3, 1), ends_on=date(2030, 3, 31),
                justification="bench approval", status=CapacityRequest.Status.SUBMITTED, created_by=manager,
            )  # fmt: skip
            with measured() as m:
                approve_request(user=manager, capacity_request=request)
            runs.append(m)
            transaction.set_rollback(True)
    return statistics.median(r["ms"] for r in runs), runs[-1]["queries"]


def main() -> None:
    setup()
    from django.contrib.auth import get_user_model
    from django.test import Client
    from rest_framework.test import APIClient

    from tenants.models import Organization, StaffRole

    rng = random.Random(42)
    program, pools = bench_program()
    Organization.objects.bulk_create(Organization(name=f"Org {i}", slug=f"org-{i}") for i in range(ORGS))
    orgs = list(Organization.objects.all())
    manager = get_user_model().objects.create_user("bench-manager", password="x")
    StaffRole.objects.create(user=manager, role=StaffRole.Role.PROGRAM_MANAGER)
    pages = Client()
    pages.force_login(manager)
    api = APIClient()
    api.force_authenticate(manager)
    targets = [
        ("page  review queue", pages, "/program/capacity/review/"),
        ("page  allocations", pages, "/program/capacity/allocations/"),
        ("page  pool timeline", pages, f"/program/capacity/pools/{pools[0].pk}/"),
        ("api   capacity-requests", api, "/api/v1/capacity-requests/"),
        ("api   allocations", api, "/api/v1/allocations/"),
        ("api   pools ?start&end", api, "/api/v1/pools/?start=2030-02-01&end=2030-04-30"),
    ]
    print(f"{ORGS:,} organizations; per size: that many submitted requests and allocations over 3 pools")
    print(f"{'endpoint':28} " + " ".join(f"{f'{n:,} rows':>22}" for n in SIZES))
    results = {name: [] for name, _, _ in targets}
    results["approve a request"] = []
    for size in SIZES:
        build(size, rng, orgs, pools, manager)
        for name, client, url in targets:
            client.get(url)  # warm caches (templates, catalog)
            run = median_get(client, url, REPEAT)
            results[name].append((run["ms"], run["queries"]))
        results["approve a request"].append(time_approval(pools[0], orgs[0], manager))
    for name, figures in results.items():
        ratio = figures[-1][0] / figures[0][0]
        print(
            f"{name:28} " + " ".join(f"{ms:>9.1f} ms {q:>3} queries" for ms, q in figures)
            + f"   {SIZES[-1]:,}/{SIZES[0]:,}: {ratio:.2f}×"
        )  # fmt: skip
    grew = [name for name, figures in results.items() if len({q for _, q in figures}) > 1]
    print(f"goal: every target within {RATIO_GOAL}× at {SIZES[-1]:,} of its time at {SIZES[0]:,}, queries constant")
    print("queries per request constant across sizes:", "yes" if not grew else f"NO: {', '.join(grew)}")
    for name, figures in results.items():
        ratio = figures[-1][0] / figures[0][0]
        record("capacity", f"{' '.join(name.split())}: {SIZES[-1]:,} ÷ {SIZES[0]:,} rows", ratio, "×",
               f"≤ {RATIO_GOAL}×", ratio <= RATIO_GOAL)  # fmt: skip
    record("capacity", f"targets whose queries grow ({len(results)} measured, the approval included)", len(grew),
           "", "0", not grew)  # fmt: skip
    explain_lists(targets)


def _plan_nodes(node: dict):
    yield node
    for child in node.get("Plans", []):
        yield from _plan_nodes(child)


def explain_lists(targets) -> None:
    """PostgreSQL only, at the largest size: how the planner reads each page's and API's sorted, paged list
    (its ORDER BY … LIMIT query) — an index that gives the order, or a scan of the table and a sort."""
    import json

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    if connection.vendor != "postgresql":
        print("EXPLAIN of the list queries: PostgreSQL only (set BENCH_DATABASE_URL)")
        return
    print(f"\nEXPLAIN at {SIZES[-1]:,} rows, each target's paged list query (ORDER BY … LIMIT):")
    for name, client, url in targets:
        with CaptureQueriesContext(connection) as ctx:
            client.get(url)
        lists = [q["sql"] for q in ctx.captured_queries if " ORDER BY " in q["sql"] and " LIMIT " in q["sql"]]
        lists = [sql for sql in lists if '"tenants_allocation"' in sql.split(" WHERE ")[0]
                 or '"tenants_capacityrequest"' in sql.split(" WHERE ")[0]]  # fmt: skip
        if not lists:
            print(f"  {name:28} no paged list query")
            continue
        for sql in lists[:2]:
            with connection.cursor() as cursor:
                cursor.execute("EXPLAIN (FORMAT JSON) " + sql)
                found = cursor.fetchone()[0]
            plan = (json.loads(found) if isinstance(found, str) else found)[0]["Plan"]
            nodes = list(_plan_nodes(plan))
            indexes = sorted({n["Index Name"] for n in nodes if "Index Name" in n})
            scans = sorted({n["Relation Name"] for n in nodes if n["Node Type"] == "Seq Scan"})
            sorted_in_memory = any(n["Node Type"] in ("Sort", "Incremental Sort") for n in nodes)
            order = sql.rsplit(" ORDER BY ", 1)[1].split(" LIMIT ")[0]
            verdict = ("index " + ", ".join(indexes)) if indexes else "no index"
            if scans:
                verdict += "; seq scan of " + ", ".join(scans)
            if sorted_in_memory:
                verdict += "; sorts"
            print(f"  {name:28} ORDER BY {order[:60]:60} {verdict}")
