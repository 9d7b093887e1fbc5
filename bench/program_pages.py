"""The program's pages as the program grows from 12 to 200 to 2,000 organizations, each with a year of usage: the
landing page (/program/) and the program usage page (/program/usage/, this week), their time, SQL queries and
the bytes sent, and the ratios of 2,000 organizations to 12 (the goal: within 1.5×, queries constant, each page
under 500 KB).

The usage is written as the rollups and the billing fetch leave it (one UsageDay per organization, pool and day,
what Cost Explorer billed per day, and their summaries per organization-week and pool-day), since the pages read
only those. Each organization also has a support case, one in ten a live cluster with a critical incident and a
silent reporter, and one in twenty a request waiting for review.

"cold" is the first request after emptying the cache (the usage page's charts rendered, as after each rollup; the
process already warm; the median of three), "warm" the median of the seven requests after them.
BENCH_PAGES_DAYS shortens the year for a quick run (BENCH_TINY=1: 2 and 4 organizations, 14 days, one request).
"""

import os
import random
import time
from datetime import timedelta

from bench._django import measured, setup
from bench._report import record, tiny

SIZES = tiny((12, 200, 2000), (2, 4))
DAYS = int(os.environ.get("BENCH_PAGES_DAYS", tiny(365, 14)))
COLD, WARM = tiny((3, 7), (1, 1))  # requests measured per page and size; their medians are printed
RATIO_GOAL, KB_GOAL = 1.5, 500
HOUR = 3_600_000_000


def grow(program, pools, manager, *, first: int, last: int, rng: random.Random) -> None:
    """Organizations first..last-1, each with a year-long allocation, a year of daily usage and billing."""
    from django.utils import timezone

    from tenants.models import Allocation, CapacityRequest, Organization
    from workloads.clusters.models import Cluster
    from workloads.health.models import HealthEvent
    from workloads.support.models import SupportCase
    from workloads.usage import summaries
    from workloads.usage.models import BilledCost, UsageDay

    now = timezone.now()
    today = timezone.localdate()
    orgs = Organization.objects.bulk_create(
        Organization(name=f"Bench org {n:04d}", slug=f"bench-org-{n:04d}") for n in range(first, last)
    )
    allocations, days, billed, cases, clusters, requests = [], [], [], [], [], []
    for org in orgs:
        n = int(org.slug.rsplit("-", 1)[1])
        pool = pools[n % len(pools)]
        count = 1 + n % 4
        allocations.append(
            Allocation(organization=org, pool=pool, instance_count=count, starts_on=program.starts_on,
                       ends_on=today + timedelta(days=5 + n % 60), status=Allocation.Status.ACTIVE)
        )  # fmt: skip
        share = 0.2 if n % 7 == 0 else rng.uniform(0.6, 1.0)  # one in seven idle
        rate = 48 if pool.instance_type.api_name.startswith("p5") else 21
        for offset in range(DAYS):
            day = today - timedelta(days=offset)
            allocated = count * 24 * HOUR
            running = int(allocated * share * rng.uniform(0.9, 1.1))
            days.append(
                UsageDay(organization=org, pool=pool, day=day, allocated_microseconds=allocated,
                         running_microseconds=running, busy_accelerator_microseconds=running * 4,
                         usd_per_hour=rate, rate_source="rate card", allocated_cost_micro_usd=allocated * rate // HOUR,
                         running_cost_micro_usd=running * rate // HOUR, computed_at=now)
            )  # fmt: skip
            if offset >= 1:  # Cost Explorer lags a day
                billed.append(
                    BilledCost(organization=org, day=day, instance_type=pool.instance_type.api_name,
                               cost_micro_usd=running * rate // HOUR, fetched_at=now)
                )  # fmt: skip
        cases.append(
            SupportCase(organization=org, title=f"NCCL timeout {n}", description="all_reduce hangs",
                        category=SupportCase.Category.NETWORKING, severity=("s1", "s2", "s3", "s4")[n % 4],
                        opened_by=manager)
        )  # fmt: skip
        if n % 20 == 0:
            requests.append(
                CapacityRequest(organization=org, pool=pool, instance_count=2, starts_on=today,
                                ends_on=today + timedelta(days=30), justification="More", created_by=manager,
                                status=CapacityRequest.Status.SUBMITTED, submitted_at=now)
            )  # fmt: skip
    Allocation.objects.bulk_create(allocations)
    UsageDay.objects.bulk_create(days, batch_size=5000)
    BilledCost.objects.bulk_create(billed, batch_size=5000)
    summaries.refresh({row.day for row in days})  # as the rollup and the billing fetch leave them
    SupportCase.objects.bulk_create(cases)
    CapacityRequest.objects.bulk_create(requests)
    for allocation in allocations:
        n = int(allocation.organization.slug.rsplit("-", 1)[1])
        if n % 10 == 0:
            clusters.append(
                Cluster(organization=allocation.organization, allocation=allocation, name=f"c{n}",
                        region=allocation.pool.region, status=Cluster.Status.IN_SERVICE, reporter_silent_since=now,
                        interconnect_suspect_since=now if n % 30 == 0 else None)
            )  # fmt: skip
    Cluster.objects.bulk_create(clusters)
    HealthEvent.objects.bulk_create(
        HealthEvent(organization=c.organization, cluster=c, instance_id=f"i-{c.pk}", gpu=3,
                    kind=HealthEvent.Kind.GPU_XID, code=79, severity=HealthEvent.Severity.CRITICAL,
                    source=HealthEvent.Source.PUSH, message="Xid 79", observed_at=now)
        for c in clusters
    )  # fmt: skip


def page(client, url: str) -> dict:
    """The medians of COLD requests each after emptying the cache and of WARM ones after them."""
    from django.core.cache import cache

    client.get(url)  # templates compiled and modules imported: "cold" is the cache's, not the process's
    colds, warms = [], []
    for _ in range(COLD):
        cache.clear()
        with measured() as cold:
            response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        colds.append(cold)
    for _ in range(WARM):
        with measured() as warm:
            response = client.get(url)
        warms.append(warm)
    cold, warm = (sorted(runs, key=lambda r: r["ms"])[len(runs) // 2] for runs in (colds, warms))
    return {
        "cold_ms": cold["ms"],
        "cold_queries": cold["queries"],
        "ms": warm["ms"],
        "queries": warm["queries"],
        "bytes": len(response.content),
    }


def main() -> None:
    setup()
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    from portal.periods import today
    from tenants.models import CapacityPool, InstanceType, Program, Region, StaffRole

    rng = random.Random(23)
    day = today()
    program = Program.objects.create(
        name="Bench program", slug="bench-program", starts_on=day - timedelta(days=DAYS - 1),
        ends_on=day + timedelta(days=90),
    )  # fmt: skip
    pools = [
        CapacityPool.objects.create(
            program=program,
            instance_type=InstanceType.objects.get(api_name=name),
            region=Region.US_EAST_1,
            total_instances=total,
            starts_on=program.starts_on,
            ends_on=program.ends_on,
        )  # fmt: skip
        for name, total in (("p5.48xlarge", 5000), ("trn1.32xlarge", 2000))
    ]
    manager = get_user_model().objects.create_user("bench-pages-manager", password="x")
    StaffRole.objects.create(user=manager, role=StaffRole.Role.PROGRAM_MANAGER)
    client = Client()
    client.force_login(manager)
    urls = {"landing": "/program/", "usage": "/program/usage/"}
    results: dict[tuple[int, str], dict] = {}
    print(f"{DAYS} days of usage per organization, on {connection.vendor}")
    print(f"{'orgs':>6} {'page':>8} {'cold ms':>8} {'queries':>8} {'warm ms':>8} {'queries':>8} {'KB':>7}")
    done = 0
    for size in SIZES:
        started = time.perf_counter()
        grow(program, pools, manager, first=done, last=size, rng=rng)
        done = size
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")
        print(f"  ({size - (results and list(results)[-1][0] or 0)} organizations added in "
              f"{time.perf_counter() - started:.1f} s)")  # fmt: skip
        for name, url in urls.items():
            result = results[(size, name)] = page(client, url)
            print(
                f"{size:>6} {name:>8} {result['cold_ms']:>8.1f} {result['cold_queries']:>8} {result['ms']:>8.1f} "
                f"{result['queries']:>8} {result['bytes'] / 1024:>7.1f}"
            )
    for name in urls:
        small, large = results[(SIZES[0], name)], results[(SIZES[-1], name)]
        print(
            f"{name:>8}: {SIZES[-1]:,} / {SIZES[0]} organizations = {large['ms'] / small['ms']:.2f}× warm, "
            f"{large['cold_ms'] / small['cold_ms']:.2f}× cold (goal ≤ 1.5×); queries {small['queries']} → "
            f"{large['queries']}; {large['bytes'] / 1024:.0f} KB (goal < 500 KB)"
        )
        span = f"{SIZES[-1]:,} ÷ {SIZES[0]} orgs"
        for kind, key in (("warm", "ms"), ("cold", "cold_ms")):
            ratio = large[key] / small[key]
            record("program_pages", f"{name}, {kind}: {span}", ratio, "×", f"≤ {RATIO_GOAL}×", ratio <= RATIO_GOAL)
        grew = large["queries"] - small["queries"]
        record("program_pages", f"{name}: queries at {SIZES[-1]:,} orgs more than at {SIZES[0]}", grew, "", "0",
               grew == 0)  # fmt: skip
        kb = large["bytes"] / 1024
        record("program_pages", f"{name}: page at {SIZES[-1]:,} orgs", kb, "KB", f"< {KB_GOAL} KB", kb < KB_GOAL)


if __name__ == "__main__":
    main()
