"""The usage definitions, written once. Every figure on a page, in a CSV, from the API or in the digest is built
from these functions and nothing else.

All periods are in the program's timezone (Asia/Tokyo: a day starts at 15:00 UTC the day before); weeks are ISO
weeks, Monday to Monday.

- Allocated instance-hours of an organization in a period: for each of its allocations that held capacity then
  (active, expired, and revoked ones up to their revocation), instance count × hours of overlap between the
  allocation's days and the period.
- Running instance-hours: hours of overlap between the organization's node run intervals and the period. An
  interval still open counts up to the last poll that saw the node running (not to "now": a stopped poller must
  not invent usage). Intervals crossing a day boundary are split exactly.
- Accelerator-hours: instance-hours × accelerators per instance from the catalog (8 for P5, 16 for Trn1).
- Utilization: running ÷ allocated.
- Cost: instance-hours × the rate of the day (workloads.usage.rates); idle = allocated − running, never below 0.

Time is counted in integer microseconds and money in integer micro-USD, so sums are exact.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal

from django.utils import timezone

from portal.periods import day_start, days_between

MICROSECONDS_PER_HOUR = 3_600_000_000
ONE_DAY = timedelta(days=1)


def microseconds(delta: timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def hours(instance_microseconds: int) -> Decimal:
    """Instance-microseconds as instance-hours (exact; pages round for display)."""
    return Decimal(instance_microseconds) / MICROSECONDS_PER_HOUR


def overlap(start: datetime, end: datetime, window_start: datetime, window_end: datetime) -> int:
    """Microseconds that [start, end) and [window_start, window_end) share."""
    return max(0, microseconds(min(end, window_end) - max(start, window_start)))


def split_by_day(start: datetime, end: datetime) -> dict[date, int]:
    """The microseconds of [start, end) falling on each program day; they add up to the whole, exactly."""
    if end <= start:
        return {}
    first, last = timezone.localdate(start), timezone.localdate(end - timedelta(microseconds=1))
    return {
        day: part
        for day in days_between(first, last)
        if (part := overlap(start, end, day_start(day), day_start(day + ONE_DAY)))
    }


def allocation_span(starts_on: date, ends_on: date, revoked_at: datetime | None) -> tuple[datetime, datetime]:
    """When an allocation holds capacity: from the start of its first day to the end of its last (dates are
    inclusive), cut short at its revocation."""
    start, end = day_start(starts_on), day_start(ends_on + ONE_DAY)
    if revoked_at is not None:
        end = max(start, min(end, revoked_at))
    return start, end


def allocated_microseconds(
    *,
    instance_count: int,
    starts_on: date,
    ends_on: date,
    revoked_at: datetime | None,
    window: tuple[datetime, datetime],
) -> int:
    """Allocated instance-microseconds of one allocation inside a window."""
    start, end = allocation_span(starts_on, ends_on, revoked_at)
    return instance_count * overlap(start, end, *window)


def utilization(running: int, allocated: int) -> Decimal | None:
    """Running ÷ allocated (None when nothing was allocated: there is nothing to use)."""
    if allocated <= 0:
        return None
    return Decimal(running) / Decimal(allocated)


def cost_micro_usd(instance_microseconds: int, usd_per_hour: Decimal) -> int:
    """What that much instance-time costs at the rate, in micro-USD (rounded half-even, per daily row)."""
    exact = Decimal(instance_microseconds) * usd_per_hour / MICROSECONDS_PER_HOUR * 1_000_000
    return int(exact.quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


def usd(micro_usd: int) -> Decimal:
    return (Decimal(micro_usd) / 1_000_000).quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN)
