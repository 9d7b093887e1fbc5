"""The usage summaries: the daily rows (UsageDay) summed per organization and ISO week (UsageWeek), per pool and
day (PoolUsageDay) and per organization and pool over the last 7 days (RecentPoolUse), kept beside them so the
program's pages — the ranking of 2,000 organizations, the landing page, the heatmap and the pool lines — read a few
thousand rows whatever the number of organizations and days of history.

They hold the usage definitions' sums of the daily rows (ROW_SUMS: idle and over-allocation floored per daily row
first; and the accelerator-time), never figures of their own, and are rewritten in the same transaction as the
daily rows they sum: by the rollup (rollups) and by a re-pricing (rates.reprice). Both take `lock()` first, so
two writers never sum each other's uncommitted rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, timedelta

from django.db import connection
from django.db.models import Q, Sum
from django.db.models.functions import TruncWeek

from portal.periods import as_date, today, week_of
from workloads.usage.billed import billed_against_computed, billed_settled_through
from workloads.usage.definitions import RECENT_DAYS, ROW_SUMS, accelerator_sums
from workloads.usage.models import BilledCost, PoolUsageDay, RecentPoolUse, SettledWeek, UsageDay, UsageWeek
from workloads.usage.periods import Period

LOCK_KEY = 0x75736167  # PostgreSQL advisory lock of the writers of daily rows ("usag")
BATCH = 2_000


def lock() -> None:
    """Serialize the writers of daily rows and their summaries until the transaction ends (PostgreSQL; SQLite
    writes one transaction at a time anyway)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [LOCK_KEY])


def refresh(days: Iterable[date], organization_ids: Iterable[int] | None = None) -> None:
    """Sum again the summaries these days' daily rows fall in: every pool on each day (a pool-day crosses
    organizations), the weeks of the days for these organizations (None: every one — after a billing fetch,
    whose latest day settles the week for every organization), and their last 7 days if a day falls in them."""
    days = sorted(set(days))
    if days:
        write(UsageDay, BilledCost, UsageWeek, PoolUsageDay, SettledWeek, days=days, organization_ids=organization_ids)
        through = today()
        if days[-1] > through - timedelta(days=RECENT_DAYS):
            write_recent(UsageDay, RecentPoolUse, organization_ids=organization_ids, through=through)


def rebuild() -> None:
    """Every summary from every daily row."""
    write(UsageDay, BilledCost, UsageWeek, PoolUsageDay, SettledWeek, days=None, organization_ids=None)
    write_recent(UsageDay, RecentPoolUse, organization_ids=None, through=today())


def write_recent(usage_day, recent_pool_use, *, organization_ids, through: date) -> None:
    """Delete and sum again these organizations' (None: every one's) rows of each pool over the RECENT_DAYS ending
    `through` (a migration passes its historical models)."""
    recent = recent_pool_use.objects.all()
    daily = usage_day.objects.order_by().filter(day__gt=through - timedelta(days=RECENT_DAYS), day__lte=through)
    if organization_ids is not None:
        organization_ids = list(organization_ids)
        recent = recent.filter(organization_id__in=organization_ids)
        daily = daily.filter(organization_id__in=organization_ids)
    recent.delete()
    recent_pool_use.objects.bulk_create(
        (
            recent_pool_use(through=through, **row)
            for row in daily.values("organization_id", "pool_id").annotate(
                allocated=Sum("allocated_microseconds"), running=Sum("running_microseconds")
            )
        ),
        batch_size=BATCH,
    )


def write(
    usage_day, billed_cost, usage_week, pool_usage_day, settled_week, *, days: list[date] | None, organization_ids
) -> None:
    """Delete and sum again the pool-days of `days` and the weeks they fall in for `organization_ids` (None: every
    day and week; every organization, and the weeks' settled day recorded in SettledWeek). A migration passes its
    historical models."""
    sums = {**ROW_SUMS, **accelerator_sums()}
    daily = usage_day.objects.order_by()
    billed = billed_cost.objects.order_by()
    pool_days = pool_usage_day.objects.all()
    weeks = usage_week.objects.all()
    if organization_ids is not None:
        organization_ids = list(organization_ids)
        weeks = weeks.filter(organization_id__in=organization_ids)
        daily_of_orgs = daily.filter(organization_id__in=organization_ids)
        billed = billed.filter(organization_id__in=organization_ids)
    else:
        daily_of_orgs = daily
    if days is None:
        mondays = {week_of(day) for day in daily.values_list("day", flat=True).distinct()}
        mondays |= {week_of(day) for day in billed.values_list("day", flat=True).distinct()}
    else:
        mondays = {week_of(day) for day in days}
        pool_days = pool_days.filter(day__in=days)
        weeks = weeks.filter(week__in=mondays)
    pool_days.delete()
    weeks.delete()

    of_days = daily if days is None else daily.filter(day__in=days)
    pool_usage_day.objects.bulk_create(
        (
            pool_usage_day(pool_id=row.pop("pool_id"), day=row.pop("day"), **row)
            for row in of_days.values("pool_id", "day").annotate(**sums)
        ),
        batch_size=BATCH,
    )
    if not mondays:
        return
    rows: dict[date, dict[int, dict]] = {week: {} for week in mondays}  # per week, per organization
    of_weeks = daily_of_orgs.filter(day__gte=min(mondays), day__lte=max(mondays) + timedelta(days=6))
    for row in of_weeks.annotate(monday=TruncWeek("day")).values("organization_id", "monday").annotate(**sums):
        week = as_date(row.pop("monday"))
        if week in rows:
            rows[week][row.pop("organization_id")] = row
    for week, of_week in rows.items():
        # The week's billed check, as the pages make it: through the week's settled day
        latest = billed_settled_through(Period("week", week, week + timedelta(days=6)), billed_cost)
        if organization_ids is None:  # every organization's week summed as of this settled day
            settled_week.objects.update_or_create(week=week, defaults={"through": latest})
        if latest is None:
            continue
        checks = billed_against_computed(billed_rows=billed, usage_rows=daily_of_orgs, first=week, through=latest)
        for org_id, (billed_total, computed) in checks.items():
            of_week.setdefault(org_id, {}).update(billed=billed_total, billed_computed=computed)
        for row in of_week.values():
            row["settled_through"] = latest
    usage_week.objects.bulk_create(
        (
            usage_week(organization_id=org_id, week=week, **row)
            for week, of_week in rows.items()
            for org_id, row in of_week.items()
        ),
        batch_size=BATCH,
    )


def weeks_hold(period: Period, daily_rows) -> bool:
    """Whether the weekly summaries hold the period's figures, and the previous period's: the ISO weeks each falls
    in have no daily row of these organizations outside it, and the two share no week. Whole weeks do, with no
    query; so does the program to date, in one query, when nothing ran before the program's start in its first week
    (no daily row is after today). A month whose first week the month before ends in, and a range cut mid-week, are
    read from the daily rows. `daily_rows`: the UsageDay rows of the organizations read."""
    if period.whole_weeks:
        return True
    spans = [period, *filter(None, [period.previous()])]
    if len(spans) == 2 and week_of(spans[1].last) == week_of(period.first):
        return False
    outside = Q()
    for span in spans:
        monday, sunday = week_of(span.first), week_of(span.last) + timedelta(days=6)
        if monday < span.first:
            outside |= Q(day__gte=monday, day__lt=span.first)
        if span.last < sunday:
            outside |= Q(day__gt=span.last, day__lte=sunday)
    return not daily_rows.filter(outside).exists()
