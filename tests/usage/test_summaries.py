"""The weekly, pool-day and recent summaries hold the daily rows' sums, whoever wrote the rows (a rollup, a
re-pricing, a full rebuild, rollups running at once), and the pages read the same figures from them as from the
daily rows."""

from collections import defaultdict
from datetime import date, timedelta
from decimal import Decimal

import pytest
import time_machine
from django.db.models import F

from portal.periods import today
from tenants.models import Allocation, Organization
from tests.factories import OrganizationFactory
from tests.usage.conftest import AFTER, WEEK, WEEK_RUNNING_COST, allocate, jst, run
from workloads.usage import rates, rollups, summaries
from workloads.usage.billed import BilledCheck, billed_settled_through, week_summaries_settled
from workloads.usage.models import (
    BilledCost,
    NodeInterval,
    PoolUsageDay,
    RateCardEntry,
    RecentPoolUse,
    UsageDay,
    UsageDirtyDay,
    UsageWeek,
)
from workloads.usage.over_time import org_weeks, weekly
from workloads.usage.periods import Period, parse_period
from workloads.usage.reports import (
    SELECTED,
    Figures,
    _figures,
    org_usage,
    program_report,
    summed,
    with_figures,
)
from workloads.usage.summaries import weeks_hold


def stored(model, *keys: str) -> dict[tuple, Figures]:
    return {tuple(row[k] for k in keys): _figures(row) for row in model.objects.values()}


def assert_summaries_match_the_daily_rows() -> None:
    everything = UsageDay.objects.all()
    first, last = date(2000, 1, 3), date(2100, 1, 3)
    by_week = dict(weekly(everything, first=first, last=last, key="organization_id"))
    assert stored(UsageWeek, "organization_id", "week") == by_week
    assert stored(PoolUsageDay, "pool_id", "day") == dict(summed(everything, "pool_id", "day"))
    assert by_week, "nothing was rolled up"
    assert recent() == recent_from_the_daily_rows()


def recent() -> dict[tuple[int, int], tuple[date, int, int]]:
    return {
        (row.organization_id, row.pool_id): (row.through, row.allocated, row.running)
        for row in RecentPoolUse.objects.all()
    }


def recent_from_the_daily_rows() -> dict[tuple[int, int], tuple[date, int, int]]:
    """Each organization's rows per pool over the 7 days ending the day its recent rows were summed through."""
    through = {org_id: day for (org_id, _pool), (day, _a, _r) in recent().items()}
    sums: dict[tuple[int, int], list] = defaultdict(lambda: [0, 0])
    for row in UsageDay.objects.filter(organization_id__in=through):
        last = through[row.organization_id]
        if last - timedelta(days=7) < row.day <= last:
            sums[(row.organization_id, row.pool_id)][0] += row.allocated_microseconds
            sums[(row.organization_id, row.pool_id)][1] += row.running_microseconds
    return {(org_id, pool_id): (through[org_id], a, r) for (org_id, pool_id), (a, r) in sums.items()}


@pytest.mark.django_db
def test_a_rollup_writes_the_weeks_and_pool_days_of_its_rows(week, p5):
    assert_summaries_match_the_daily_rows()
    assert UsageWeek.objects.filter(week=date(2027, 3, 8)).count() == 2  # Alpha and Beta, one row each
    # Rolled up on the 20th: the 14th to the 20th. Alpha's Trn1 was revoked on the 12th: no recent row in it.
    assert {(org, pool): through for (org, pool), (through, _a, _r) in recent().items()} == {
        (org_id, p5.pk): date(2027, 3, 20) for org_id in Organization.objects.values_list("pk", flat=True)
    }


@pytest.mark.django_db
def test_a_rate_change_sums_the_repriced_days_again(week, p5, manager):
    before = UsageWeek.objects.get(organization__slug="beta", week=date(2027, 3, 8)).running_cost
    with time_machine.travel(AFTER, tick=False):
        rates.add_rate(user=manager, instance_type=p5.instance_type, region="us-east-1",
                       kind=RateCardEntry.Kind.NEGOTIATED, usd_per_hour=Decimal("30.00"),
                       effective_from=date(2027, 3, 9))  # fmt: skip
    assert UsageWeek.objects.get(organization__slug="beta", week=date(2027, 3, 8)).running_cost < before
    assert_summaries_match_the_daily_rows()


@pytest.mark.django_db
def test_days_whose_rows_vanish_leave_no_summary(week, org_b):
    """Beta's allocation and run removed: its days rolled up again have no rows, so neither have its weeks."""
    Allocation.objects.filter(organization=org_b).delete()
    NodeInterval.objects.filter(organization=org_b).delete()
    with time_machine.travel(AFTER, tick=False):
        rollups.mark_days(org_b.pk, date(2027, 3, 1), date(2027, 3, 20))
        rollups.roll_up()
    assert not UsageWeek.objects.filter(organization=org_b).exists()
    assert_summaries_match_the_daily_rows()


@pytest.mark.django_db
def test_a_rebuild_gives_what_the_rollups_wrote(week):
    """The migration's rebuild (every summary from every daily row) and the rollups' incremental writes agree."""
    written = (stored(UsageWeek, "organization_id", "week"), stored(PoolUsageDay, "pool_id", "day"), recent())
    UsageWeek.objects.all().delete()
    PoolUsageDay.objects.all().delete()
    RecentPoolUse.objects.all().delete()
    with time_machine.travel(AFTER, tick=False):
        summaries.rebuild()
    assert (stored(UsageWeek, "organization_id", "week"), stored(PoolUsageDay, "pool_id", "day"), recent()) == written


@pytest.mark.django_db
def test_weeks_cut_by_the_span_are_summed_from_the_daily_rows(week):
    """A span from a Wednesday to a Thursday: its first and last weeks are part-weeks, read from the daily rows;
    the week between from the summaries; together what the daily rows give."""
    first, last = date(2027, 3, 3), date(2027, 3, 18)
    with time_machine.travel(AFTER, tick=False):
        found = org_weeks(UsageWeek.objects.all(), UsageDay.objects.all(), first=first, last=last)
    assert found == dict(weekly(UsageDay.objects.all(), first=first, last=last, key="organization_id"))
    assert set(week for _org, week in found) == {date(2027, 3, 1), date(2027, 3, 8), date(2027, 3, 15)}


@pytest.mark.django_db
@pytest.mark.parametrize(
    "period",
    [
        Period("week", date(2027, 3, 8), date(2027, 3, 14)),  # read from the weekly summaries
        Period("range", date(2027, 3, 1), date(2027, 3, 14)),  # whole weeks too
        # From the weekly summaries too: a Monday to a day after today, after a month of whole weeks
        Period("month", date(2027, 3, 1), date(2027, 3, 31)),
        Period("range", date(2027, 3, 9), date(2027, 3, 13)),  # from the daily rows
        Period("range", date(2027, 3, 3), date(2027, 3, 18)),  # whole weeks inside, but cut: the daily rows
    ],
)
def test_the_program_table_is_the_daily_rows_sums_whichever_rows_it_reads(week, program, period):
    with time_machine.travel(AFTER, tick=False):
        report = program_report(period=period, organizations=Organization.objects.all(), program=program)
        rows = report.rows
    days = UsageDay.objects.filter(day__gte=period.first, day__lte=period.last)
    expected = summed(days, "organization_id")
    previous = period.previous()
    before = summed(UsageDay.objects.filter(day__gte=previous.first, day__lte=previous.last), "organization_id")
    assert expected, "the week's daily rows hold nothing for this period"
    assert {row.organization.pk: row.figures for row in rows} == {key[0]: f for key, f in expected.items()}
    for row in rows:
        earlier = before.get((row.organization.pk,))
        assert row.previous == (Figures(allocated=earlier.allocated, running=earlier.running) if earlier else None)
    assert {p.pool.pk: p.figures for p in report.pools} == {key[0]: f for key, f in summed(days, "pool_id").items()}


def every_figure(period: Period, *, by_weeks: bool) -> dict[int, dict]:
    """Every figure of every organization as the program table's queryset has it, those it shows and those it
    sorts by, read from the weekly summaries or from the daily rows."""
    ranked = org_usage(
        Organization.objects.all(), period=period, through=None, threshold=Decimal("0.5"), by_weeks=by_weeks
    )
    shown = (*SELECTED, "allocated_accelerators", "running_accelerators")
    orders = {f"order_{name}": F(name) for name in ("utilization", "change", "is_idle", "is_over")}
    rows = with_figures(ranked, period=period).annotate(**orders).values("pk", *shown, *orders)
    return {row["pk"]: row for row in rows}


@pytest.mark.django_db
def test_the_program_to_date_is_read_from_its_weeks_when_they_hold_it(week, program, org_b, p5):
    """The program started on a Friday: its first week's summary holds nothing else, so the program to date is its
    weeks' summaries (52 rows an organization in a year, not 730 daily ones), every figure and order the daily
    rows give. Once Beta ran on the Wednesday before the start, that week holds more than the program: the daily
    rows are read, and the figures stay the program's."""
    assert program.starts_on == date(2027, 1, 1) and program.starts_on.weekday() == 4
    with time_machine.travel(AFTER, tick=False):
        period = parse_period({"period": "program"}, program=program, today=today())
        assert (period.first, period.last) == (date(2027, 1, 1), date(2027, 3, 20))
        everyone = Organization.objects.all()
        assert weeks_hold(period, UsageDay.objects.filter(organization__in=everyone))
        assert every_figure(period, by_weeks=True) == every_figure(period, by_weeks=False)
        expected = summed(UsageDay.objects.filter(day__gte=period.first, day__lte=period.last), "organization_id")
        rows = program_report(period=period, organizations=everyone, program=program).rows
        assert {row.organization.pk: row.figures for row in rows} == {key[0]: f for key, f in expected.items()}

        run(org_b, "p5.48xlarge", jst(2026, 12, 30), jst(2026, 12, 31), instance="early")
        rollups.mark_days(org_b.pk, date(2026, 12, 30), date(2026, 12, 31))
        rollups.roll_up()
        assert UsageDay.objects.filter(organization=org_b, day__lt=period.first).exists()
        assert not weeks_hold(period, UsageDay.objects.filter(organization__in=everyone))
        rows = program_report(period=period, organizations=everyone, program=program).rows
        assert {row.organization.pk: row.figures for row in rows} == {key[0]: f for key, f in expected.items()}
        assert every_figure(period, by_weeks=True) != every_figure(period, by_weeks=False)  # the week holds more


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("period", "held"),
    [
        (Period("month", date(2027, 3, 1), date(2027, 3, 31)), True),  # February ends on a Sunday
        (Period("month", date(2027, 1, 1), date(2027, 1, 31)), False),  # December ends in January's first week
        # 13 days from a Monday: the 13 before start on a Tuesday, and the Monday before has rows
        (Period("range", date(2027, 3, 8), date(2027, 3, 20)), False),
        (Period("range", date(2027, 3, 9), date(2027, 3, 13)), False),
    ],
)
def test_a_period_and_the_one_before_read_from_weeks_only_when_they_hold_them(week, period, held):
    """Read from the weekly summaries only when they hold the period and the one before exactly: every figure
    as the daily rows give it either way."""
    with time_machine.travel(AFTER, tick=False):
        assert weeks_hold(period, UsageDay.objects.all()) == held
        if held:
            assert every_figure(period, by_weeks=True) == every_figure(period, by_weeks=False)


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgresql("concurrent writers")
def test_rollups_running_at_once_leave_the_summaries_whole(catalog, program, p5):
    """Six rollups at once, one organization-day per batch, all on the same days of the same pool: each writes
    the pool-days every other one also writes."""
    from tests.tenants.test_capacity_concurrency import race

    with time_machine.travel(AFTER, tick=False):
        for n in range(12):
            org = OrganizationFactory(slug=f"racer-{n}")
            allocate(org, p5, 2, date(2027, 3, 1), date(2027, 6, 30), status=Allocation.Status.ACTIVE)
            run(org, "p5.48xlarge", jst(2027, 3, 8), jst(2027, 3, 10, 12), instance=f"r{n}")
        UsageDirtyDay.objects.all().delete()  # only the three days below, each organization's
        for org_id in Organization.objects.filter(slug__startswith="racer-").values_list("pk", flat=True):
            rollups.mark_days(org_id, date(2027, 3, 8), date(2027, 3, 10))
        results = race([lambda: rollups.roll_up(batch=1) for _ in range(6)])
    assert all(isinstance(r, int) for r in results), results
    assert sum(results) == 12 * 3
    assert_summaries_match_the_daily_rows()
    assert PoolUsageDay.objects.filter(pool=p5, day=date(2027, 3, 9)).get().running == 12 * 24 * 3_600_000_000
    assert UsageWeek.objects.filter(week=date(2027, 3, 8)).count() == 12


def bill(org, day: date, micro_usd: int) -> None:
    BilledCost.objects.create(organization=org, day=day, instance_type="p5.48xlarge", cost_micro_usd=micro_usd,
                              fetched_at=AFTER)  # fmt: skip


def running_cost(org, first: date, last: date) -> int:
    """The organization's running cost over the days, from the hand-computed table (never from the rows written)."""
    return sum(cost for day, cost in WEEK_RUNNING_COST[org.slug].items() if first <= day <= last)


@pytest.mark.django_db
@pytest.mark.parametrize("ratio", ["1.10", "1.1001", "0.8999", "0.90", "1.00"])
def test_the_billed_check_from_the_summaries_is_the_daily_rows_check(week, program, org_a, org_b, ratio):
    """Alpha billed `ratio` × its computed cost for the 8th–12th (settled through the 12th); a billing fetch sums
    the weeks again. The week's table, its flag and the program's totals read from the summaries are the ones
    BilledCheck gives over the daily rows — exactly at the tolerance too — and a day billed since is read from the
    daily rows until the next fetch."""
    computed = running_cost(org_a, date(2027, 3, 8), date(2027, 3, 12))
    assert computed == 5_309_200_000  # 1,320.96 + 440.32 + 1,093.92 + 1,476.00 + 978.00 USD (conftest)
    billed = int(Decimal(computed) * Decimal(ratio))
    for day in range(8, 13):
        bill(org_a, date(2027, 3, day), 0)
    BilledCost.objects.filter(organization=org_a, day=date(2027, 3, 12)).update(cost_micro_usd=billed)
    with time_machine.travel(AFTER, tick=False):
        summaries.refresh([date(2027, 3, 8)])  # as the billing fetch does when it ends
        assert billed_settled_through(WEEK) == date(2027, 3, 12)
        assert week_summaries_settled(WEEK.first, date(2027, 3, 12))
        expected = BilledCheck(billed, computed, date(2027, 3, 12))
        report = program_report(period=WEEK, organizations=Organization.objects.all(), program=program)
        alpha = next(row for row in report.rows if row.organization == org_a)
        assert (alpha.billed, alpha.billed_computed, alpha.billed_off) == (billed, computed, expected.off)
        assert report.billed_check.billed == billed and report.billed_check.computed == computed
        flags = report.ranked.annotate(flag=F("is_billed_off")).values_list("pk", "flag")
        assert dict(flags)[org_a.pk] == int(expected.off)  # the order's flag, in SQL

        bill(org_b, date(2027, 3, 13), 1)  # a later day billed: the summaries no longer hold the check
        assert not week_summaries_settled(WEEK.first, billed_settled_through(WEEK))
        report = program_report(period=WEEK, organizations=Organization.objects.all(), program=program)
        alpha = next(row for row in report.rows if row.organization == org_a)
        computed_13 = running_cost(org_a, date(2027, 3, 8), date(2027, 3, 13))
        assert computed_13 == computed  # Alpha ran nothing on the 13th (a2 last seen the 12th, t1 ended at noon)
        assert (alpha.billed, alpha.billed_computed) == (billed, computed_13)


@pytest.mark.django_db
def test_an_organization_billed_without_computed_cost_reads_as_computed_zero(week, program, manager, client):
    """Billed on a settled day it ran nothing (a month: the billed check from the daily rows): computed 0, no gap to
    divide by, on the page and in the CSV alike."""
    idle = OrganizationFactory(name="Billed Only", slug="billed-only")
    bill(idle, date(2027, 3, 10), 5_000_000)
    period = Period("month", date(2027, 3, 1), date(2027, 3, 31))
    with time_machine.travel(AFTER, tick=False):
        report = program_report(period=period, organizations=Organization.objects.all(), program=program)
        row = next(r for r in report.rows if r.organization == idle)
        assert (row.billed, row.billed_computed, row.billed_check.gap) == (5_000_000, 0, None)
        assert report.billed_check.billed >= 5_000_000
        client.force_login(manager)  # signed in on the day travelled to
        response = client.get("/program/usage/", {"period": "2027-03"})
        assert response.status_code == 200 and "Billed Only" in response.text
        csv = client.get("/program/usage/export.csv", {"period": "2027-03"})
        assert csv.status_code == 200
