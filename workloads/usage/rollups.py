"""The daily rollups: per organization × pool × program day, allocated and running instance-time and their cost,
and the busy accelerator-time of scheduler jobs on those nodes (and per cluster, the running and busy parts),
rebuilt from the allocations, the node run intervals and the jobs.

Incremental: whatever moves a figure marks the organization's affected days (`mark_days`) in the same
transaction — a poll that saw or lost nodes, an allocation granted or revoked — and `roll_up` recomputes only
the marked days, then sums their weeks and pool-days again (workloads.usage.summaries) in the same transaction.
Idempotent: a day recomputed twice, or a node polled again, gives the same rows.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date, datetime
from itertools import chain

from django.db import connection, transaction
from django.utils import timezone

from portal.periods import day_start, today
from tenants.models import Allocation, CapacityPool
from workloads.jobs.busy import NodeRun, busy_time
from workloads.usage import summaries
from workloads.usage.definitions import ONE_DAY, allocated_microseconds, apportion, split_by_day, to_grain
from workloads.usage.dirty import mark_days
from workloads.usage.models import ClusterUsageDay, NodeInterval, UsageDay, UsageDirtyDay, UsageRevision
from workloads.usage.rates import RateTable, load_rates, price


def mark_current_days() -> int:
    """Yesterday and today, for every organization holding an allocation then: today's allocated time grows by
    the hour, and yesterday's row is finished once the day is over."""
    day = today()
    org_ids = set(
        Allocation.objects.filter(starts_on__lte=day, ends_on__gte=day - ONE_DAY).values_list(
            "organization_id", flat=True
        )
    )
    for org_id in org_ids:
        mark_days(org_id, day - ONE_DAY, day)
    return len(org_ids)


def mark_everything() -> int:
    """Every day of every organization from its first allocation or run: a full rebuild."""
    firsts: dict[int, date] = {}
    for org_id, day in Allocation.objects.values_list("organization_id", "starts_on"):
        firsts[org_id] = min(day, firsts.get(org_id, day))
    for org_id, started in NodeInterval.objects.values_list("organization_id", "started_at"):
        day = timezone.localdate(started)
        firsts[org_id] = min(day, firsts.get(org_id, day))
    for org_id, first in firsts.items():
        mark_days(org_id, first)
    return len(firsts)


class PoolFinder:
    """Which program pool a node's instance-time counts against: the pool of its type and region whose window
    holds the day (a controller or head node has no pool and is not accelerator capacity)."""

    def __init__(self):
        self._pools: dict[tuple[str, str], list[CapacityPool]] = defaultdict(list)
        for pool in CapacityPool.objects.select_related("instance_type").order_by("starts_on", "pk"):
            self._pools[(pool.instance_type.api_name, pool.region)].append(pool)

    def pool(self, instance_type: str, region: str, day: date) -> CapacityPool | None:
        candidates = self._pools.get((instance_type, region), [])
        for pool in candidates:
            if pool.starts_on <= day <= pool.ends_on:
                return pool
        return candidates[-1] if candidates else None

    def get(self, pool_id: int) -> CapacityPool | None:
        return next((p for pools in self._pools.values() for p in pools if p.pk == pool_id), None)


def roll_up(*, batch: int = 2_000, as_of: datetime | None = None) -> int:
    """Recompute the marked days, a batch at a time; returns how many organization-days were recomputed."""
    done = 0
    rates, pools = load_rates(), PoolFinder()
    while True:
        count = _roll_up_batch(batch=batch, as_of=as_of or timezone.now(), rates=rates, pools=pools)
        done += count
        if count < batch:
            return done


@transaction.atomic
def _roll_up_batch(*, batch: int, as_of: datetime, rates: RateTable, pools: PoolFinder) -> int:
    summaries.lock()  # one writer of daily rows at a time: each sums the others' committed rows into the summaries
    marks = UsageDirtyDay.objects.order_by("organization_id", "day")
    if connection.features.has_select_for_update_skip_locked:
        marks = marks.select_for_update(skip_locked=True)  # two rollups never take the same marks
    claimed = list(marks.values_list("pk", "organization_id", "day")[:batch])
    if not claimed:
        return 0
    # Claimed by deleting first: a mark written while we compute (a poll committing now) survives for the next run.
    UsageDirtyDay.objects.filter(pk__in=[pk for pk, _org, _day in claimed]).delete()
    days_by_org: dict[int, set[date]] = defaultdict(set)
    for _pk, org_id, day in claimed:
        days_by_org[org_id].add(day)
    # Organizations marked on the same days are recomputed together: after a poll cycle, every org's today at once.
    orgs_by_days: dict[tuple[date, ...], list[int]] = defaultdict(list)
    for org_id, days in days_by_org.items():
        orgs_by_days[tuple(sorted(days))].append(org_id)
    for days, org_ids in orgs_by_days.items():
        recompute(org_ids, list(days), as_of=as_of, rates=rates, pools=pools)
    summaries.refresh({day for _pk, _org, day in claimed}, days_by_org)
    UsageRevision.bump(timezone.now())
    return len(claimed)


def recompute(
    organization_ids: list[int], days: list[date], *, as_of: datetime, rates: RateTable, pools: PoolFinder
) -> None:
    """Rebuild these organizations' rows of these days from their allocations and node intervals."""
    wanted = set(days)
    window = (day_start(days[0]), min(day_start(days[-1] + ONE_DAY), as_of))
    allocated: dict[tuple[int, int, date], int] = defaultdict(int)
    running: dict[tuple[int, int, date], int] = defaultdict(int)
    by_cluster: dict[tuple[int, int | None, int, date], int] = defaultdict(int)
    cluster_names: dict[int | None, str] = {}

    allocations = Allocation.objects.filter(
        organization_id__in=organization_ids, starts_on__lte=days[-1], ends_on__gte=days[0]
    ).values_list("organization_id", "pool_id", "instance_count", "starts_on", "ends_on", "revoked_at")
    for org_id, pool_id, count, starts_on, ends_on, revoked_at in allocations:
        for day in days:
            if starts_on <= day <= ends_on:
                day_window = (day_start(day), min(day_start(day + ONE_DAY), as_of))
                part = allocated_microseconds(
                    instance_count=count, starts_on=starts_on, ends_on=ends_on, revoked_at=revoked_at, window=day_window
                )
                if part:
                    allocated[(org_id, pool_id, day)] += part

    # Closed runs ending after the window starts, then open runs: two index range scans on (organization, ended_at),
    # so recomputing today reads today's runs, not every run the organization ever had. No ORDER BY, and no start
    # bound on the open runs (the nodes running now; one starting after the window has no part in it below): either
    # made SQLite's planner take (organization, started_at) and read every run before the window. Each part sorted
    # here as the model orders runs (start, id).
    of_orgs = NodeInterval.objects.filter(organization_id__in=organization_ids).order_by()
    columns = ("organization_id", "instance_type", "region", "started_at", "ended_at", "last_seen_at", "cluster_id",
               "cluster__name", "node_id", "pk")  # fmt: skip
    closed = of_orgs.filter(started_at__lt=window[1], ended_at__gt=window[0]).values_list(*columns)
    still_open = of_orgs.filter(ended_at__isnull=True, last_seen_at__gt=window[0]).values_list(*columns)
    intervals = chain(*(sorted(part, key=lambda row: (row[3], row[-1])) for part in (closed, still_open)))
    runs: list[NodeRun] = []  # what the nodes ran, in pools, for the busy time's cap
    for (
        org_id,
        instance_type,
        region,
        started_at,
        ended_at,
        last_seen_at,
        cluster_id,
        cluster_name,
        node_id,
        _pk,
    ) in intervals:
        end = min(ended_at or last_seen_at, as_of)
        cluster_names[cluster_id] = cluster_name or ""
        start, end = max(started_at, window[0]), min(end, window[1])
        for day, part in split_by_day(start, end).items():
            if day not in wanted:
                continue
            pool = pools.pool(instance_type, region, day)
            if pool is None:
                continue  # a controller or head node: not accelerator capacity
            running[(org_id, pool.pk, day)] += part
            by_cluster[(org_id, cluster_id, pool.pk, day)] += part
            first, last = max(start, day_start(day)), min(end, day_start(day + ONE_DAY))
            runs.append(NodeRun(org_id, cluster_id, node_id, pool.pk, instance_type, first, last))
    busy = busy_time(organization_ids, window, runs)

    now = timezone.now()
    rows, kept = [], {}
    for org_id, pool_id, day in sorted(set(allocated) | set(running)):
        pool = pools.get(pool_id) or CapacityPool.objects.select_related("instance_type").get(pk=pool_id)
        row = UsageDay(organization_id=org_id, pool_id=pool_id, day=day, computed_at=now)
        # The row's figures on the grain (definitions: the unit of account), busy never above what ran.
        row.allocated_microseconds, row.running_microseconds, row.busy_accelerator_microseconds = kept_figures(
            allocated.get((org_id, pool_id, day), 0),
            running.get((org_id, pool_id, day), 0),
            busy.figure(busy.by_pool, (org_id, pool_id, day)),
            accelerators=pool.instance_type.accelerators_per_instance,
        )
        kept[(org_id, pool_id, day)] = row
        price(row, rates.rate(pool.instance_type_id, pool.region, day))
        rows.append(row)
    scope = {"organization_id__in": organization_ids, "day__in": days}
    UsageDay.objects.filter(**scope).delete()
    ClusterUsageDay.objects.filter(**scope).delete()
    UsageDay.objects.bulk_create(rows, batch_size=1000)
    clusters: dict[tuple[int, int, date], list] = defaultdict(list)
    for (org_id, cluster_id, pool_id, day), part in by_cluster.items():
        busy_part = busy.figure(busy.by_cluster, (org_id, cluster_id, pool_id, day))
        clusters[(org_id, pool_id, day)].append((cluster_id, part, busy_part))
    cluster_rows = []
    for key in sorted(clusters, key=lambda k: (k[0], k[2], k[1])):
        org_id, pool_id, day = key
        row = kept[key]
        parts = sorted(clusters[key], key=lambda part: (part[0] is None, part[0] or 0))
        for cluster_id, part, busy_part in cluster_parts(
            parts, row.running_microseconds, row.busy_accelerator_microseconds
        ):
            cluster_rows.append(
                ClusterUsageDay(organization_id=org_id, cluster_id=cluster_id,
                                cluster_name=cluster_names.get(cluster_id, ""), pool_id=pool_id, day=day,
                                running_microseconds=part, busy_accelerator_microseconds=busy_part)
            )  # fmt: skip
    ClusterUsageDay.objects.bulk_create(cluster_rows, batch_size=1000)


def kept_figures(allocated: int, running: int, busy: int | None, *, accelerators: int) -> tuple[int, int, int | None]:
    """A daily row's allocated, running and busy time as it is kept: each rounded to the grain once, busy capped by
    the running accelerator-time (rounding must not lift it above what ran)."""
    running = to_grain(running)
    return to_grain(allocated), running, None if busy is None else min(to_grain(busy), running * accelerators)


def cluster_parts(parts: list[tuple], running: int, busy: int | None) -> list[tuple]:
    """The clusters' (key, running, busy) of one daily row, shared out of the row's kept running and busy time in
    proportion to their exact parts, in the order given (definitions.apportion): they add up to the row."""
    shares = apportion([p[1] for p in parts], running)
    busy_shares = apportion([p[2] or 0 for p in parts], busy or 0)
    return [
        (cluster_id, share, None if busy_part is None else busy_share)
        for (cluster_id, _part, busy_part), share, busy_share in zip(parts, shares, busy_shares, strict=True)
    ]
