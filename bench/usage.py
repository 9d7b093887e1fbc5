"""Usage accounting over one program year: 150 nodes over 12 organizations, each node restarted about every
6 hours (about 220,000 run intervals, 1.3 M node-hours), a year of allocations.

Prints the full rollup's time, the incremental rollup after one more poll cycle (the marks a poll leaves:
today for the organizations whose nodes it saw), and the program dashboard's time and SQL queries for a week,
a month and the program to date with 1 week, 1 month and 1 year of history. The ratios at the end compare the
1-year history with the 1-week one (the goal: within 1.2×, queries constant). The program-wide charts are the
same for every period and are cached per rollup generation: "cold" is the first request after a rollup (charts
rendered, time grows with the program's weeks), the other columns every request after it.

BENCH_USAGE_NODES scales the fleet down for a quick run (default 150).
"""

import os
import random
import time
from datetime import datetime, timedelta
from datetime import time as clock

from bench._django import measured, median_get, setup

ORGS = 12
NODES = int(os.environ.get("BENCH_USAGE_NODES", "150"))
MEAN_RUN_HOURS = 6
HISTORY = (("1 year", 365), ("1 month", 30), ("1 week", 7))  # measured from the largest down, deleting as we go
REPEAT = 3


def build(program, pools, orgs, rng: random.Random, tz) -> int:
    """Allocations for the year and the node run intervals: returns the number of intervals."""
    from tenants.models import Allocation
    from workloads.usage.models import NodeInterval

    now = datetime.now(tz)
    first = datetime.combine(program.starts_on, clock(), tz)
    nodes_per_org: dict[tuple[int, int], int] = {}
    trn1_nodes = max(1, NODES // 6)
    for n in range(NODES):
        pool = pools[1] if n < trn1_nodes else pools[0]
        key = (n % ORGS, pool.pk)
        nodes_per_org[key] = nodes_per_org.get(key, 0) + 1
    allocations = []
    for (org_index, pool_id), count in nodes_per_org.items():
        pool = next(p for p in pools if p.pk == pool_id)
        quarter = program.starts_on
        while quarter <= program.ends_on:
            last = min(quarter + timedelta(days=90), program.ends_on)
            allocations.append(
                Allocation(
                    organization=orgs[org_index], pool=pool, instance_count=count, starts_on=quarter, ends_on=last
                )
            )
            quarter = last + timedelta(days=1)
    Allocation.objects.bulk_create(allocations)

    intervals = []
    for n in range(NODES):
        pool = pools[1] if n < trn1_nodes else pools[0]
        org = orgs[n % ORGS]
        share = 0.35 if n % ORGS == 2 else 0.97  # one idle organization
        at = first + timedelta(minutes=rng.randrange(60))
        while at < now:
            hours = rng.uniform(0.2, 2 * MEAN_RUN_HOURS - 0.2)
            end = at + timedelta(hours=hours)
            still_running = end >= now
            intervals.append(
                NodeInterval(
                    organization=org,
                    instance_id=f"i-bench-{n:04d}",
                    instance_type=pool.instance_type.api_name,
                    region=pool.region,
                    started_at=at,
                    ended_at=None if still_running else end,
                    last_seen_at=now if still_running else end,
                )
            )
            gap = timedelta(minutes=2) if rng.random() < share else timedelta(hours=hours * 3)
            at = end + gap
    NodeInterval.objects.bulk_create(intervals, batch_size=5_000)
    return len(intervals)


def page(client, url: str) -> dict:
    """The first request after emptying the cache (cold: the program charts rendered), then the median of the
    following ones (the charts read from the cache, as every request until the next rollup)."""
    from django.core.cache import cache

    cache.clear()
    with measured() as cold:
        assert client.get(url).status_code == 200
    return {"cold_ms": cold["ms"], "cold_queries": cold["queries"], **median_get(client, url, REPEAT)}


def main() -> None:
    setup()
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.utils import timezone

    from portal.periods import iso_week, today
    from tenants.models import Allocation, CapacityPool, InstanceType, Organization, Program, Region, StaffRole
    from workloads.usage import rollups
    from workloads.usage.models import NodeInterval, UsageDay, UsageDirtyDay

    tz = timezone.get_current_timezone()
    rng = random.Random(14)
    day = today()
    program = Program.objects.create(
        name="Bench usage", slug="bench-usage", starts_on=day - timedelta(days=364), ends_on=day + timedelta(days=1)
    )
    pools = [
        CapacityPool.objects.create(
            program=program,
            instance_type=InstanceType.objects.get(api_name=name),
            region=Region.US_EAST_1,
            total_instances=total,
            starts_on=program.starts_on,
            ends_on=program.ends_on,
        )
        for name, total in (("p5.48xlarge", 127), ("trn1.32xlarge", 24))
    ]
    orgs = [
        Organization.objects.create(name=f"Bench usage org {i:02d}", slug=f"bench-usage-{i:02d}") for i in range(ORGS)
    ]
    started = time.perf_counter()
    count = build(program, pools, orgs, rng, tz)
    node_hours = sum(
        ((end or seen) - start).total_seconds() / 3600
        for start, end, seen in NodeInterval.objects.values_list("started_at", "ended_at", "last_seen_at")
    )
    print(f"data: {NODES} nodes, {ORGS} orgs, {count:,} intervals, {node_hours:,.0f} node-hours "
          f"({time.perf_counter() - started:.1f} s to generate) on {connection.vendor}")  # fmt: skip
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")

    started = time.perf_counter()
    rollups.mark_everything()
    days = rollups.roll_up()
    full = time.perf_counter() - started
    print(f"full rollup: {days:,} organization-days in {full:.2f} s ({UsageDay.objects.count():,} rows)")

    # One more poll cycle: every running node seen again now, its organization's today marked (as the poll does).
    now = timezone.now()
    NodeInterval.objects.filter(ended_at=None).update(last_seen_at=now)
    for org in orgs:
        rollups.mark_days(org.pk, day)
    marked = UsageDirtyDay.objects.count()
    started = time.perf_counter()
    incremental_days = rollups.roll_up()
    incremental = time.perf_counter() - started
    print(
        f"incremental rollup after one poll cycle: {incremental_days} organization-days ({marked} marked) in "
        f"{incremental * 1000:.0f} ms = {incremental / full:.2%} of the full rollup (goal: under 1%)"
    )

    manager = get_user_model().objects.create_user("bench-usage-manager", password="x")
    StaffRole.objects.create(user=manager, role=StaffRole.Role.PROGRAM_MANAGER)
    client = Client()
    client.force_login(manager)
    periods = {
        "week": f"period={iso_week(day - timedelta(days=day.weekday()))}",
        "month": f"period={day:%Y-%m}",
        "program": "period=program",
    }
    results: dict[tuple[str, str], dict] = {}
    print(f"{'history':>8} {'period':>8} {'cold ms':>8} {'queries':>8} {'ms':>8} {'queries':>8}")
    for label, history_days in HISTORY:
        cut = day - timedelta(days=history_days - 1)
        if cut > program.starts_on:  # shorten the history: the program starts at the cut, nothing before it
            NodeInterval.objects.filter(started_at__lt=datetime.combine(cut, clock(), tz)).delete()
            UsageDay.objects.filter(day__lt=cut).delete()
            Allocation.objects.filter(ends_on__lt=cut).delete()
            Allocation.objects.filter(starts_on__lt=cut).update(starts_on=cut)
            CapacityPool.objects.filter(program=program).update(starts_on=cut)
            Program.objects.filter(pk=program.pk).update(starts_on=cut)
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("ANALYZE")
        for period, query in periods.items():
            result = page(client, f"/program/usage/?{query}")
            results[(label, period)] = result
            print(
                f"{label:>8} {period:>8} {result['cold_ms']:>8.1f} {result['cold_queries']:>8} "
                f"{result['ms']:>8.1f} {result['queries']:>8}"
            )
    for period in periods:
        year, week = results[("1 year", period)], results[("1 week", period)]
        print(
            f"{period:>8}: 1 year / 1 week history = {year['ms'] / week['ms']:.2f}× time (goal ≤ 1.2×), "
            f"queries {week['queries']} → {year['queries']}; cold (charts rendered) "
            f"{year['cold_ms'] / week['cold_ms']:.2f}×"
        )


if __name__ == "__main__":
    main()
