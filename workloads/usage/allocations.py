"""What each allocation has been used for, read from the usage rollups: its figures to date, the projection at the
recent rate, an organization's utilization over a window and a pool's average running instances per day (what
the capacity pages read through tenants.capacity.usage)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal

from django.db.models import Q, Sum
from django.utils import timezone

from portal.periods import day_start
from tenants.models import Allocation, CapacityPool
from workloads.usage.definitions import (
    MICROSECONDS_PER_HOUR,
    ONE_DAY,
    RECENT_DAYS,
    allocation_span,
    hours,
    overlap,
)
from workloads.usage.models import UsageDay
from workloads.usage.reports import InstanceTime, summed


@dataclass
class AllocationUse(InstanceTime):
    """One allocation's figures to date. Running time is the organization's running time in the pool, shared
    among its allocations there in proportion to what each allocated that day."""

    allocation: Allocation
    allocated: int  # instance-microseconds, to date
    running: int
    remaining: int  # instance-microseconds from now to the allocation's end
    recent_running: int  # over the last 7 days, for the projection
    recent_days: Decimal
    daily: dict[date, int] = field(default_factory=dict)  # its running share per day: the burn-down's steps

    @property
    def remaining_hours(self) -> Decimal:
        """Calendar instance-time left to the allocation's end (the projection's horizon)."""
        return hours(self.remaining)

    @property
    def granted(self) -> int:
        """The whole window's instance-time, as granted (instance-microseconds)."""
        return self.allocation.instance_hours * MICROSECONDS_PER_HOUR

    @property
    def unused(self) -> int:
        """Remaining as the pages show it: granted − ran, nothing once the allocation has ended or is revoked."""
        return max(self.granted - self.running, 0) if self.remaining else 0

    @property
    def total(self) -> int:
        return self.allocated + self.remaining

    @property
    def projected_share(self) -> Decimal | None:
        """At the last 7 days' rate, the share of the whole allocation used by its last day."""
        if not self.total or not self.recent_days:
            return None
        per_microsecond = Decimal(self.recent_running) / (self.recent_days * 86_400 * 1_000_000)
        projected = Decimal(self.running) + per_microsecond * self.remaining / self.allocation.instance_count
        return projected / Decimal(self.total)


def allocation_use(allocations: list[Allocation], *, as_of: datetime | None = None) -> dict[int, AllocationUse]:
    """Figures for these allocations in one query: the daily rows of their organizations in their pools."""
    as_of = as_of or timezone.now()
    if not allocations:
        return {}
    pairs = {(a.organization_id, a.pool_id) for a in allocations}
    first, last = min(a.starts_on for a in allocations), max(a.ends_on for a in allocations)
    pair_filter = Q()
    for org_id, pool_id in pairs:
        pair_filter |= Q(organization_id=org_id, pool_id=pool_id)
    # Each pair's days with something allocated and run (the others share nothing), in day order.
    days: dict[tuple[int, int], list[tuple[date, int, int]]] = {pair: [] for pair in pairs}
    for org_id, pool_id, day, allocated, running in (
        UsageDay.objects.filter(
            pair_filter,
            day__gte=first,
            day__lte=min(last, timezone.localdate(as_of)),
            allocated_microseconds__gt=0,
            running_microseconds__gt=0,
        )
        .order_by("day")
        .values_list("organization_id", "pool_id", "day", "allocated_microseconds", "running_microseconds")
    ):
        days[(org_id, pool_id)].append((day, allocated, running))
    recent_from = timezone.localdate(as_of) - timedelta(days=RECENT_DAYS - 1)
    windows: dict[date, tuple[datetime, datetime, int]] = {}  # each day's moments and length, computed once

    def window(day: date) -> tuple[datetime, datetime, int]:
        if day not in windows:
            start, end = day_start(day), min(day_start(day + ONE_DAY), as_of)
            windows[day] = (start, end, overlap(start, end, start, end))
        return windows[day]

    result = {}
    for allocation in allocations:
        span = allocation_span(allocation.starts_on, allocation.ends_on, allocation.revoked_at)
        allocated_to_date = allocation.instance_count * overlap(*span, span[0], as_of)
        running = recent = 0
        daily: dict[date, int] = {}
        count, first_day, last_day = allocation.instance_count, allocation.starts_on, allocation.ends_on
        for day, total_allocated, total_running in days[(allocation.organization_id, allocation.pool_id)]:
            if day < first_day or day > last_day:
                continue
            start, end, length = window(day)
            # definitions.allocated_microseconds: the whole day inside the allocation's span, or the part that is
            inside = span[0] <= start and end <= span[1]
            mine = count * (length if inside else overlap(*span, start, end))
            share = total_running * mine // total_allocated
            running += share
            daily[day] = share
            if day >= recent_from:
                recent += share
        recent_start = max(day_start(recent_from), span[0])
        recent_days = Decimal(max(overlap(recent_start, as_of, span[0], span[1]), 0)) / (86_400 * 1_000_000)
        remaining = allocation.instance_count * overlap(*span, as_of, span[1]) if allocation.revoked_at is None else 0
        result[allocation.pk] = AllocationUse(
            allocation, allocated_to_date, running, remaining, recent, recent_days, daily
        )
    return result


def org_utilization(organization_ids: set[int], *, first: date, last: date) -> dict[int, Decimal | None]:
    """Utilization of each organization's allocations over [first, last], one query."""
    totals = summed(
        UsageDay.objects.filter(organization_id__in=organization_ids, day__gte=first, day__lte=last), "organization_id"
    )
    return {org_id: totals[(org_id,)].utilization if (org_id,) in totals else None for org_id in organization_ids}


def pool_running(pool: CapacityPool, *, first: date, last: date, now: datetime | None = None) -> dict[date, Decimal]:
    """Average instances running in the pool each day (running instance-time ÷ the day's length; today's so far
    ÷ the part of today gone by, so the line does not drop at the right edge as if everything had stopped)."""
    now = now or timezone.now()
    rows = (
        UsageDay.objects.filter(pool=pool, day__gte=first, day__lte=last)
        .values("day")
        .annotate(running=Sum("running_microseconds"))
        .values_list("day", "running")
    )
    averages = {}
    for day, running in rows:
        elapsed = min(now - day_start(day), timedelta(days=1))
        if elapsed <= timedelta(0):
            continue
        averages[day] = Decimal(running) / Decimal(elapsed // timedelta(microseconds=1))
    return averages


class Reader:
    """What the capacity pages read (tenants.capacity.usage)."""

    allocation_use = staticmethod(allocation_use)
    org_utilization = staticmethod(org_utilization)
    pool_running = staticmethod(pool_running)


READER = Reader()
