"""Usage over time: per ISO week and per day, for the charts. A program's weeks read the summaries
(workloads.usage.summaries: per organization and week, per pool and day), an organization's the daily rows."""

from __future__ import annotations

from collections import defaultdict
from datetime import date, timedelta

from django.db.models import Q, QuerySet, Sum
from django.db.models.functions import TruncWeek

from portal.periods import as_date, today, week_of
from tenants.models import Organization
from workloads.usage.definitions import ROW_SUMS, SUMMED, hours, summary_sums
from workloads.usage.models import BilledCost, ClusterUsageDay, PoolUsageDay, UsageDay, UsageWeek
from workloads.usage.periods import Period
from workloads.usage.reports import ACCELERATORS, Figures, _figures, summed

WEEK = timedelta(days=7)


def weekly(rows: QuerySet[UsageDay], *, first: date, last: date, key: str) -> dict[tuple[int, date], Figures]:
    """Per `key` (organization_id, pool_id) and ISO week (its Monday), summed from the daily rows, one query."""
    totals: dict[tuple[int, date], Figures] = defaultdict(Figures)
    grouped = (
        rows.filter(day__gte=first, day__lte=last)
        .annotate(week=TruncWeek("day"))
        .values(key, "week", accelerators=ACCELERATORS)
        .annotate(**ROW_SUMS)
    )
    for row in grouped:
        totals[(row[key], as_date(row["week"]))].add(_figures(row))
    return totals


def org_weeks(
    weeks: QuerySet[UsageWeek], days: QuerySet[UsageDay], *, first: date, last: date
) -> dict[tuple[int, date], Figures]:
    """Per organization and ISO week from `first` to `last`, in two queries: the weeks wholly inside from the
    weekly summaries `weeks`, the part-weeks at either end (a span starting or ending mid-week) from the daily rows
    `days`. A week reaching today counts as whole once `last` does: no daily row is after today."""
    inner_first = first if first.weekday() == 0 else week_of(first) + WEEK
    inner_last = week_of(last) if last.weekday() == 6 or last >= today() else week_of(last) - WEEK
    totals: dict[tuple[int, date], Figures] = defaultdict(Figures)
    if inner_first <= inner_last:
        whole = weeks.filter(week__gte=inner_first, week__lte=inner_last).order_by()
        for row in whole.values("organization_id", "week", *SUMMED):
            totals[(row["organization_id"], row["week"])].add(_figures(row))
    edges = days.filter(Q(day__lt=inner_first) | Q(day__gt=inner_last + timedelta(days=6)))
    for found, figures in weekly(edges, first=first, last=last, key="organization_id").items():
        totals[found].add(figures)
    return totals


def pool_weeks(*, first: date, last: date) -> dict[tuple[int, date], Figures]:
    """Per pool and ISO week, summed from the pool-days (every organization: program staff only), one query."""
    grouped = (
        PoolUsageDay.objects.filter(day__gte=first, day__lte=last)
        .annotate(week=TruncWeek("day"))
        .values("pool_id", "week")
        .annotate(**summary_sums())
    )
    return {(row["pool_id"], as_date(row["week"])): _figures(row) for row in grouped}


def daily(rows: QuerySet[UsageDay], *, first: date, last: date, key: str = "pool_id") -> dict[tuple, Figures]:
    """Per day (and `key`), one query."""
    return summed(rows.filter(day__gte=first, day__lte=last), "day", key)


def billed_total(organization: Organization, period: Period) -> int | None:
    """What AWS billed the organization's account over the period (micro-USD); None when nothing was fetched."""
    total = (
        BilledCost.objects.for_org(organization)
        .filter(day__gte=period.first, day__lte=period.last)
        .aggregate(total=Sum("cost_micro_usd"))["total"]
    )
    return total


def cluster_breakdown(organization: Organization, period: Period) -> list[dict]:
    """Running instance-hours per cluster of the organization over the period, largest first."""
    rows = (
        ClusterUsageDay.objects.for_org(organization)
        .filter(day__gte=period.first, day__lte=period.last)
        .values("cluster_id", "cluster_name", "pool__instance_type__api_name", "pool__region")
        .annotate(running=Sum("running_microseconds"))
        .order_by("-running", "cluster_name")
    )
    return [{**row, "running_hours": hours(row["running"])} for row in rows]
