"""Usage accounting over one program year: 150 nodes over 12 organizations, each node restarted about every
6 hours (about 220,000 run intervals, 1.3 M node-hours), a year of allocations.

Prints the full rollup's time, the incremental rollup after one more poll cycle (the marks a poll leaves:
today for the organizations whose nodes it saw; goal: under 1 % of the full rollup), and the program dashboard's
time and SQL queries for a week, a month and the program to date with 1 week, 1 month and 1 year of history.

Each history is a program of its own: a copy of the year's database (bench/_django.clone_database) where the
program, its pools and allocations start at the cut, the intervals before it are gone (those running across it
start at it), and every daily row and summary (UsageDay, UsageWeek, PoolUsageDay, RecentPoolUse, SettledWeek) is
rolled up again from what is left: the 1-week history holds a week in every table, as a program in its first week
does. The requests are measured in ROUNDS rounds, each visiting every (history, period) in a shuffled order: per
visit one "cold" request (the pages' cache emptied first with cache.clear(), so the program charts are rendered
again, as after each rollup; the process itself is warm) and one "warm" request after it (the charts from the
cache). Printed: medians over the rounds with their min–max, and the 1-year ÷ 1-week ratio of the medians with the
min–max of the per-round ratios (goal: warm within 1.2×, queries constant). Cold has no goal: the charts draw every
week of the program, so their time grows with it.

BENCH_USAGE_NODES scales the fleet down for a quick run (default 150). BENCH_TINY=1: 4 nodes, a month of history
against two weeks and one, one round.
"""

import os
import random
import statistics
import time
from datetime import datetime, timedelta
from datetime import time as clock

from bench._django import clone_database, measured, setup, use_database
from bench._report import record, tiny

ORGS = 12
NODES = int(os.environ.get("BENCH_USAGE_NODES", tiny(150, 4)))
MEAN_RUN_HOURS = 6
HISTORY = tiny((("1 year", 365), ("1 month", 30), ("1 week", 7)), (("1 month", 30), ("2 weeks", 14), ("1 week", 7)))
ROUNDS = tiny(15, 1)
WARM_GOAL = 1.2


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


def shorten(program, *, cut, tz) -> None:
    """This database's program as if it had started at `cut`: what ran before is gone, every daily row and summary
    rolled up again from what is left."""
    from django.db import connection
    from django.db.models import Q

    from tenants.models import Allocation, CapacityPool, Program
    from workloads.usage import rollups
    from workloads.usage.models import (
        NodeInterval,
        PoolUsageDay,
        RecentPoolUse,
        SettledWeek,
        UsageDay,
        UsageDirtyDay,
        UsageWeek,
    )

    start = datetime.combine(cut, clock(), tz)
    NodeInterval.objects.filter(ended_at__lte=start).delete()
    NodeInterval.objects.filter(started_at__lt=start).filter(Q(ended_at=None) | Q(ended_at__gt=start)).update(
        started_at=start
    )
    for model in (UsageDay, UsageWeek, PoolUsageDay, RecentPoolUse, SettledWeek, UsageDirtyDay):
        model.objects.all().delete()
    Allocation.objects.filter(ends_on__lt=cut).delete()
    Allocation.objects.filter(starts_on__lt=cut).update(starts_on=cut)
    CapacityPool.objects.filter(program=program).update(starts_on=cut)
    Program.objects.filter(pk=program.pk).update(starts_on=cut)
    rollups.mark_everything()
    rollups.roll_up()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


def table_rows() -> str:
    from workloads.usage.models import NodeInterval, PoolUsageDay, UsageDay, UsageWeek

    return ", ".join(f"{m.__name__} {m.objects.count():,}" for m in (NodeInterval, UsageDay, UsageWeek, PoolUsageDay))


def visit(client, database: str, url: str) -> tuple[dict, dict]:
    """One cold request (the pages' cache emptied) and one warm one after it, on `database`."""
    from django.core.cache import cache
    from django.db import connection

    use_database(database)
    connection.ensure_connection()  # the connection's opening is not the page's time
    cache.clear()
    with measured() as cold:
        assert client.get(url).status_code == 200, url
    with measured() as warm:
        assert client.get(url).status_code == 200, url
    return cold, warm


def spread(values: list[float]) -> str:
    return f"{min(values):.1f}–{max(values):.1f}" if len(values) > 1 else "—"


def main() -> None:
    setup()
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.utils import timezone

    from portal.periods import iso_week, today
    from tenants.models import CapacityPool, InstanceType, Organization, Program, Region, StaffRole
    from workloads.usage import rollups
    from workloads.usage.models import NodeInterval, UsageDay, UsageDirtyDay

    tz = timezone.get_current_timezone()
    rng = random.Random(14)
    day = today()
    longest = HISTORY[0][1]
    program = Program.objects.create(
        name="Bench usage",
        slug="bench-usage",
        starts_on=day - timedelta(days=longest - 1),
        ends_on=day + timedelta(days=1),
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
    record("usage", f"full rollup, {HISTORY[0][0]}, {NODES} nodes", full, "s", "", None)

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
    record("usage", "incremental rollup after one poll cycle ÷ full rollup", incremental / full * 100, "%", "< 1 %",
           incremental / full < 0.01)  # fmt: skip

    manager = get_user_model().objects.create_user("bench-usage-manager", password="x")
    StaffRole.objects.create(user=manager, role=StaffRole.Role.PROGRAM_MANAGER)
    client = Client()
    client.force_login(manager)  # before the copies: its session is in each of them

    databases = {HISTORY[0][0]: str(connection.settings_dict["NAME"])}
    for label, history_days in HISTORY[1:]:
        source = databases[HISTORY[0][0]]
        target = f"{source[: -len('.sqlite3')]}_{history_days}d.sqlite3" if connection.vendor == "sqlite" else (
            f"{source}_{history_days}d")  # fmt: skip
        databases[label] = clone_database(source, target)
        use_database(target)
        started = time.perf_counter()
        shorten(program, cut=day - timedelta(days=history_days - 1), tz=tz)
        print(f"{label} of history: a copy rolled up again in {time.perf_counter() - started:.1f} s")
    for label, database in databases.items():
        use_database(database)
        print(f"  {label:>8}: {table_rows()}")

    periods = {
        "week": f"period={iso_week(day - timedelta(days=day.weekday()))}",
        "month": f"period={day:%Y-%m}",
        "program": "period=program",
    }
    visits = [(label, period) for label in databases for period in periods]
    for label, period in visits:  # templates compiled and modules imported: "cold" is the cache's, not the process's
        visit(client, databases[label], f"/program/usage/?{periods[period]}")
    runs: dict[tuple[str, str], list[tuple[dict, dict]]] = {v: [] for v in visits}
    order = random.Random(7)
    for _ in range(ROUNDS):
        order.shuffle(visits)
        for label, period in visits:
            runs[(label, period)].append(visit(client, databases[label], f"/program/usage/?{periods[period]}"))
    use_database(databases[HISTORY[0][0]])

    print(f"\nmedians of {ROUNDS} rounds (min–max), each round every history and period in a shuffled order")
    print(f"{'history':>8} {'period':>8} {'cold ms':>18} {'queries':>8} {'warm ms':>18} {'queries':>8}")
    shown = sorted(runs.items(), key=lambda kv: (list(databases).index(kv[0][0]), list(periods).index(kv[0][1])))
    for (label, period), measured_runs in shown:
        colds = [c["ms"] for c, _w in measured_runs]
        warms = [w["ms"] for _c, w in measured_runs]
        print(
            f"{label:>8} {period:>8} {statistics.median(colds):>8.1f} ({spread(colds):>9}) "
            f"{measured_runs[-1][0]['queries']:>8} {statistics.median(warms):>8.1f} ({spread(warms):>9}) "
            f"{measured_runs[-1][1]['queries']:>8}"
        )
    longest_label, shortest_label = HISTORY[0][0], HISTORY[-1][0]
    for period in periods:
        long_runs, short_runs = runs[(longest_label, period)], runs[(shortest_label, period)]
        ratios = {}
        for kind, index in (("warm", 1), ("cold", 0)):
            long_ms = [r[index]["ms"] for r in long_runs]
            short_ms = [r[index]["ms"] for r in short_runs]
            per_round = [a / b for a, b in zip(long_ms, short_ms, strict=True)]
            ratios[kind] = (statistics.median(long_ms) / statistics.median(short_ms), per_round)
        queries = (short_runs[-1][1]["queries"], long_runs[-1][1]["queries"])
        warm, warm_rounds = ratios["warm"]
        cold, cold_rounds = ratios["cold"]
        print(
            f"{period:>8}: {longest_label} / {shortest_label} history = {warm:.2f}× warm (per round "
            f"{min(warm_rounds):.2f}–{max(warm_rounds):.2f}×; goal ≤ {WARM_GOAL}×), queries {queries[0]} → "
            f"{queries[1]}; cold (charts rendered) {cold:.2f}× ({min(cold_rounds):.2f}–{max(cold_rounds):.2f}×)"
        )
        span = f"{longest_label} ÷ {shortest_label} of history"
        record("usage", f"dashboard, {period}, warm: {span} (per round {min(warm_rounds):.2f}–{max(warm_rounds):.2f}×)",
               warm, "×", f"≤ {WARM_GOAL}×", warm <= WARM_GOAL)  # fmt: skip
        record("usage", f"dashboard, {period}: queries with {longest_label} more than with {shortest_label}",
               queries[1] - queries[0], "", "0", queries[0] == queries[1])  # fmt: skip
        record("usage", f"dashboard, {period}, cold: {span} (per round {min(cold_rounds):.2f}–{max(cold_rounds):.2f}×)",
               cold, "×", "none: the charts draw every week of the program", None)  # fmt: skip


if __name__ == "__main__":
    main()
