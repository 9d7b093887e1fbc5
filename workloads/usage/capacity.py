"""What the program's pools offered over a period: their capacity in instance-time and what it costs at the rate
card, the first columns of the program's pool table (workloads.usage.reports)."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from portal.periods import day_start
from tenants.models import CapacityPool
from workloads.usage.definitions import ONE_DAY, cost_micro_usd, microseconds, to_grain
from workloads.usage.periods import Period
from workloads.usage.rates import load_rates

# A whole program day: two midnights of the program's zone subtract as wall-clock times (overlap), 24 hours.
DAY_MICROSECONDS = 24 * 3_600_000_000


def pool_capacity(pools: list[CapacityPool], period: Period, *, as_of: datetime) -> dict[int, tuple[int, int]]:
    """What each pool offered over the period to date: (instance-microseconds, micro-USD at the day's rate), each
    day priced on its own. The days before `as_of`'s are whole days of 24 hours (midnight to midnight, program
    time), its day counts up to `as_of`, the days after it nothing: so a run of whole days at one rate costs its
    number of days times one day's cost, and a year is summed in a few steps rather than day by day."""
    rates = load_rates()
    cut = timezone.localdate(as_of, timezone.get_default_timezone())  # the day `as_of` falls in
    offered = {}
    for pool in pools:
        capacity = cost = 0
        first, last = max(period.first, pool.starts_on), min(period.last, pool.ends_on)
        day = pool.total_instances * DAY_MICROSECONDS
        whole = rates.runs(pool.instance_type_id, pool.region, first, min(last, cut - ONE_DAY))
        for run_first, run_last, rate in whole:
            days = (run_last - run_first).days + 1
            capacity += days * day
            cost += days * cost_micro_usd(day, rate.usd_per_hour)
        # Today so far, on the grain and to the cent as a daily row keeps it (definitions: exact figures).
        if first <= cut <= last and (part := to_grain(pool.total_instances * microseconds(as_of - day_start(cut)))) > 0:
            capacity += part
            cost += cost_micro_usd(part, rates.rate(pool.instance_type_id, pool.region, cut).usd_per_hour)
        offered[pool.pk] = (capacity, cost)
    return offered
