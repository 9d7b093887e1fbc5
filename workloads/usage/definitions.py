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
- Cost: instance-hours × the rate of the day (workloads.usage.rates).
- Idle: per organization, pool and day, allocated − running, floored at 0; a week, an organization or the program
  is the sum of those daily rows, never allocated − running over the sum (that would net one pool's idle hours
  against another's over-running).
- Over-allocation: per organization, pool and day, running − allocated, floored at 0 (nodes kept after an
  allocation ended, or more nodes than allocated): a figure of its own, shown and flagged, never netted.
- Billed against computed: Cost Explorer settles a day or more late, so the two are compared only over the days
  it has settled — the organization's days up to its last billed day (`billed_through`); days after it are
  "not yet billed" and shown apart.

Time is counted in integer microseconds and money in integer micro-USD, so sums are exact.

Exact figures, one rule: the daily row (organization × pool × program day, `UsageDay`) is the unit of account. When
it is computed, its instance-time is rounded once to the grain, 0.36 s (a ten-thousandth of an hour: `to_grain`),
and its cost once to the cent (`cost_micro_usd`); what Cost Explorer billed is kept to the cent per day too
(`micro_usd_to_the_cent`). Every other figure — a week, a month, an organization, a pool, the program; a row of a
CSV or of the API — is a sum of daily rows, so it is exact in those units: instance- and accelerator-hours to four
decimals, dollars to the cent, and a total is the sum of the rows it adds up, to the last digit, whichever rows a
page, a file or the API shows. CSV and API carry those exact values; only pages round hours (to a tenth) for
people to read. A day's part of a cluster is shared out of its row to the grain too (`apportion`), so the
clusters of a row add up to it.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction

from django.db.models import F, Q, Sum, Value
from django.db.models.functions import Greatest
from django.utils import timezone

from portal.periods import day_start, days_between

MICROSECONDS_PER_HOUR = 3_600_000_000
GRAIN = 360_000  # µs: a daily row's instance-time is kept to a ten-thousandth of an hour (0.36 s)
HOUR_PLACES = Decimal("0.0001")  # so its hours are exact to four decimals
CENT = 10_000  # micro-USD: a daily row's cost is kept to the cent
ONE_DAY = timedelta(days=1)
RECENT_DAYS = 7  # the projections' recent rate: the last 7 days, today included


def microseconds(delta: timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def hours(instance_microseconds: int) -> Decimal:
    """Instance-microseconds as instance-hours (exact; pages round for display)."""
    return Decimal(instance_microseconds) / MICROSECONDS_PER_HOUR


def to_grain(microseconds: int | Fraction) -> int:
    """Instance-time rounded (half-even) to the grain, as a daily row keeps it: its hours have four decimals."""
    return round(Fraction(microseconds) / GRAIN) * GRAIN


def apportion(parts: list[int], total: int) -> list[int]:
    """`total` (on the grain) shared among `parts` in proportion to them, each on the grain, adding up to `total`
    exactly: each part is the difference of two rounded running sums, so no rounding is lost or counted twice."""
    whole = sum(parts)
    if not whole:
        return [0] * len(parts)
    shares, running, before = [], 0, 0
    for part in parts:
        running += part
        upto = to_grain(Fraction(running * total, whole))
        shares.append(upto - before)
        before = upto
    return shares


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
    """What that much instance-time costs at the rate, to the cent (rounded half-even, once per daily row), in
    micro-USD."""
    cents = Fraction(instance_microseconds) * Fraction(usd_per_hour) * 100 / MICROSECONDS_PER_HOUR
    return round(cents) * CENT


def micro_usd_to_the_cent(amount: Decimal) -> int:
    """A dollar amount (what Cost Explorer billed for a day) rounded half-even to the cent, in micro-USD."""
    return int((amount * 100).quantize(Decimal(1), rounding=ROUND_HALF_EVEN)) * CENT


def usd(micro_usd: int) -> Decimal:
    """Micro-USD as dollars and cents (exact for every figure summed from daily rows: they are kept to the cent)."""
    return (Decimal(micro_usd) / 1_000_000).quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN)


def idle_microseconds(*, allocated: int, running: int) -> int:
    """Idle instance-time of one daily row (one organization, pool and day): what was allocated and did not run."""
    return max(allocated - running, 0)


def over_allocation_microseconds(*, allocated: int, running: int) -> int:
    """Over-allocated instance-time of one daily row: what ran beyond the allocation that day."""
    return max(running - allocated, 0)


def row_sums(prefix: str = "", filter: Q | None = None) -> dict[str, Sum]:
    """The definitions as SQL aggregates over UsageDay rows — reached through `prefix` (e.g. "usage__" from an
    organization) and only those matching `filter` —: each row is floored before the sum, so an organization-week,
    a pool or the program adds up the daily figures and never nets one row against another."""

    def total(name: str) -> Sum:
        return Sum(F(prefix + name), filter=filter)

    def floored(minuend: str, subtrahend: str) -> Sum:
        return Sum(Greatest(F(prefix + minuend) - F(prefix + subtrahend), Value(0)), filter=filter)

    return {
        "allocated": total("allocated_microseconds"),
        "running": total("running_microseconds"),
        "busy": total("busy_accelerator_microseconds"),
        "allocated_cost": total("allocated_cost_micro_usd"),
        "running_cost": total("running_cost_micro_usd"),
        "idle": floored("allocated_microseconds", "running_microseconds"),
        "idle_cost": floored("allocated_cost_micro_usd", "running_cost_micro_usd"),
        "over_allocation": floored("running_microseconds", "allocated_microseconds"),
        "over_allocation_cost": floored("running_cost_micro_usd", "allocated_cost_micro_usd"),
    }


def accelerator_sums(prefix: str = "", filter: Q | None = None) -> dict[str, Sum]:
    """Accelerator-time summed across instance types (each row's instance-time × its type's accelerators), for
    sums not grouped by instance type; `prefix` and `filter` as in row_sums."""
    per_instance = F(prefix + "pool__instance_type__accelerators_per_instance")
    return {
        "allocated_accelerators": Sum(F(prefix + "allocated_microseconds") * per_instance, filter=filter),
        "running_accelerators": Sum(F(prefix + "running_microseconds") * per_instance, filter=filter),
    }


# Every reader (pages, CSV, API, digest, weekly review) sums through ROW_SUMS (or row_sums, for rows reached
# through a relation or filtered).
ROW_SUMS = row_sums()


# The sums kept per organization-week and per pool-day (workloads.usage.summaries: SummedUsage's fields, named as
# these): ROW_SUMS and the accelerator-time, summed again by whoever reads them.
SUMMED = (*ROW_SUMS, "allocated_accelerators", "running_accelerators")


def summary_sums(prefix: str = "", filter: Q | None = None) -> dict[str, Sum]:
    """Sums of summary rows (UsageWeek, PoolUsageDay), reached through `prefix` and filtered as in row_sums: plain
    sums, each daily row having been floored before it was summed into them."""
    return {name: Sum(F(prefix + name), filter=filter) for name in SUMMED}
