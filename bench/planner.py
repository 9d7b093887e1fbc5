"""The capacity planner: 40, 200 and 1,000 submitted requests over 3 pools holding 50,000 allocations. Per size:
the time to plan (loading the queue and the ledger, the solver, storing the plan), the instance-hours granted
against first-come-first-served and against the solver's bound, and a check of every pool-day against the ledger
(allocated + planned ≤ allocatable). Goal: 200 requests planned in under 2 s, never below first-come-first-served,
never an overcommitted day. BENCH_DATABASE_URL runs it on PostgreSQL. Each figure is recorded with its goal
(bench/_report.py); the per-size table is the docs' (docs/operations/benchmarks.md, `python -m bench --readme planner`).

The pools are sized to the busiest day of their allocations plus a little, so the queue asks far more than is free
and the plan has to choose.
"""

import random
import time
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta

from bench._django import bench_program, setup
from bench._report import record, table, tiny

SIZES = tiny((40, 200, 1_000), (10, 20))
ALLOCATIONS = tiny(50_000, 600)
ORGS = 12
TIME_LIMITS = {40: 1.5, 200: 1.5, 1_000: 10.0, 10: 0.5, 20: 0.5}
GOAL_SIZE, GOAL_SECONDS = 200, 2.0


def load(rng: random.Random, pools, orgs) -> None:
    from django.db import connection

    from tenants.capacity import ledger
    from tenants.models import Allocation, CapacityPool

    rows = []
    for i in range(ALLOCATIONS):
        pool = pools[i % len(pools)]
        first = pool.starts_on + timedelta(days=rng.randrange(170))
        last = min(first + timedelta(days=rng.randrange(7, 30)), pool.ends_on)
        rows.append(Allocation(organization=rng.choice(orgs), pool=pool, instance_count=rng.randrange(1, 9),
                               starts_on=first, ends_on=last))  # fmt: skip
    Allocation.objects.bulk_create(rows, batch_size=5_000)
    ledger.rebuild()
    for pool in pools:
        busiest = max(ledger.allocated_by_day([pool.pk], first=pool.starts_on, last=pool.ends_on)[pool.pk].values())
        CapacityPool.objects.filter(pk=pool.pk).update(total_instances=busiest + 50)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


def queue(rng: random.Random, size: int, pools, orgs, user) -> None:
    from tenants.models import CapacityRequest

    CapacityRequest.objects.all().delete()
    rows = []
    for i in range(size):
        pool = pools[i % len(pools)]
        first = pool.starts_on + timedelta(days=rng.randrange(150))
        last = first + timedelta(days=rng.randrange(7, 30))
        rows.append(
            CapacityRequest(
                organization=rng.choice(orgs), pool=pool, instance_count=rng.randrange(8, 65), starts_on=first,
                ends_on=last, start_slack_days=rng.choice([0, 0, 7, 14]), justification="bench",
                status=CapacityRequest.Status.SUBMITTED, created_by=user,
                submitted_at=datetime(2029, 11, 1, tzinfo=UTC) + timedelta(minutes=i),
            )
        )  # fmt: skip
    CapacityRequest.objects.bulk_create(rows)


def overcommitted(plan, pools) -> int:
    """Pool-days where the ledger's allocated plus the plan's grants exceed the pool's allocatable instances."""
    from tenants.capacity.ledger import allocated_by_day

    planned = defaultdict(int)
    for row in plan.result["requests"]:
        if row["instances"]:
            day, last = date.fromisoformat(row["starts_on"]), date.fromisoformat(row["ends_on"])
            while day <= last:
                planned[(row["pool"], day)] += row["instances"]
                day += timedelta(days=1)
    bad = 0
    for pool in pools:
        pool.refresh_from_db()
        used = allocated_by_day([pool.pk], first=pool.starts_on, last=pool.ends_on)[pool.pk]
        bad += sum(
            1
            for (pid, day), n in planned.items()
            if pid == pool.pk and used.get(day, 0) + n > pool.allocatable_instances
        )
    return bad


def main() -> None:
    setup()
    from django.contrib.auth import get_user_model

    from tenants.capacity.planning.services import PlanAsk, make_plan
    from tenants.models import Organization, StaffRole

    rng = random.Random(26)
    program, pools = bench_program()
    orgs = [Organization.objects.create(name=f"Org {i}", slug=f"org-{i}") for i in range(ORGS)]
    manager = get_user_model().objects.create_user("bench-manager", password="x")
    StaffRole.objects.create(user=manager, role=StaffRole.Role.PROGRAM_MANAGER)
    load(rng, pools, orgs)
    print(f"{ALLOCATIONS:,} allocations over 3 pools; {ORGS} organizations; requests ask 8–64 instances for 7–30 days,")
    print("a quarter with 7 days of slack and a quarter with 14; each pool 50 instances above its busiest day")
    print(f"{'requests':>9} {'limit s':>8} {'plan s':>7} {'status':>9} {'granted h':>11} {'FCFS h':>10} "
          f"{'vs FCFS':>8} {'bound h':>10} {'gap':>7} {'min share':>9} {'overcommitted days':>19}")  # fmt: skip
    rows = []
    for size in SIZES:
        queue(rng, size, pools, orgs, manager)
        started = time.perf_counter()
        plan = make_plan(user=manager, ask=PlanAsk(time_limit=TIME_LIMITS[size]))
        seconds = time.perf_counter() - started
        r = plan.result
        bad = overcommitted(plan, pools)
        share = "—" if r["min_share"] is None else f"{r['min_share']:.3f}"
        versus = r["granted_hours"] / max(r["fcfs_hours"], 1)
        print(
            f"{size:>9,} {TIME_LIMITS[size]:>8.1f} {seconds:>7.2f} {r['status']:>9} {r['granted_hours']:>11,} "
            f"{r['fcfs_hours']:>10,} {versus:>7.3f}× {r['bound_hours']:>10,} "
            f"{r['gap']:>7.2%} {share:>9} {bad:>19}"
        )
        words = {
            "OPTIMAL": "optimal",
            "FEASIBLE": f"best found, gap {r['gap']:.1%}",
            "FCFS": "first come, first served",
        }
        status = words.get(r["status"], r["status"].lower())
        fcfs_delta = (r["fcfs_hours"] - r["granted_hours"]) / max(r["granted_hours"], 1)
        rows.append([f"{size:,}", f"{TIME_LIMITS[size]:g} s", f"{seconds:.2f} s", status, f"{r['granted_hours']:,}",
                     f"{r['fcfs_hours']:,} ({fcfs_delta:+.1%})", f"{r['bound_hours']:,}", share, bad])  # fmt: skip
        if size == GOAL_SIZE:
            record("planner", f"plan {size} requests", seconds, "s", f"< {GOAL_SECONDS:g} s", seconds < GOAL_SECONDS)
        else:
            record("planner", f"plan {size:,} requests", seconds, "s", "", None)
        record("planner", f"{size:,} requests: granted ÷ first come, first served", versus, "×", "≥ 1.00×",
               r["granted_hours"] >= r["fcfs_hours"])  # fmt: skip
        record("planner", f"{size:,} requests: overcommitted pool-days", bad, "days", "0", bad == 0)
    table(
        "planner",
        "per size",
        ["requests", "time limit", "time to plan", "status", "granted (instance-hours)", "first come, first served",
         "solver's bound", "smallest share", "overcommitted days"],
        rows,
    )  # fmt: skip
    print(f"goal: {GOAL_SIZE} requests in under {GOAL_SECONDS:g} s; never below first-come-first-served; "
          "no overcommitted day")  # fmt: skip
