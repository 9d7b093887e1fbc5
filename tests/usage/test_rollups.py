"""The daily rollups against a week computed by hand, and what must never change them twice."""

from datetime import date
from decimal import Decimal

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tenants.models import Organization
from tests.usage.conftest import AFTER, WEEK, jst, run
from workloads.models import ClusterUsageDay, NodeInterval, RateCardEntry, UsageDay, UsageDirtyDay
from workloads.usage import rates, rollups
from workloads.usage.reports import program_report

pytestmark = pytest.mark.django_db


def figures_by_slug(report):
    return {row.organization.slug: row.figures for row in report.rows}


def test_the_hand_computed_week(week, program):
    with time_machine.travel(AFTER, tick=False):
        report = program_report(period=WEEK, organizations=Organization.objects.all(), program=program)
    alpha, beta = figures_by_slug(report)["alpha"], figures_by_slug(report)["beta"]

    # Alpha: P5 4 × 168 h + Trn1 2 × 60 h allocated; P5 32 + 52.5 h and Trn1 60 h running.
    assert alpha.allocated_hours == Decimal(672 + 120)
    assert alpha.running_hours == Decimal("144.5")
    assert alpha.allocated_accelerator_hours == Decimal(672 * 8 + 120 * 16)
    assert alpha.running_accelerator_hours == Decimal("84.5") * 8 + 60 * 16
    assert alpha.utilization == Decimal("144.5") / 792
    # P5: 3 days at 55.04 and 4 at 40.00; Trn1 at 21.50.
    assert alpha.allocated_usd == Decimal("31211.52") + Decimal("2580.00")
    assert alpha.running_usd == Decimal("4019.20") + Decimal("1290.00")
    assert alpha.idle_usd == alpha.allocated_usd - alpha.running_usd
    # Beta ran its two P5 all week: half its allocation, the run cut at the week's end.
    assert (beta.allocated_hours, beta.running_hours, beta.utilization) == (336, 168, Decimal("0.5"))
    assert beta.allocated_usd == Decimal("15605.76")
    assert beta.running_usd == Decimal("7802.88")
    # Idle below the program's 50%: Alpha is, Beta (at exactly 50%) is not.
    assert [row.organization.slug for row in report.idle_rows] == ["alpha"]


def test_pool_totals_against_capacity(week, program, p5, trn1):
    with time_machine.travel(AFTER, tick=False):
        report = program_report(period=WEEK, organizations=Organization.objects.all(), program=program)
    pools = {row.pool.instance_type.api_name: row for row in report.pools}
    assert pools["p5.48xlarge"].capacity_hours == 127 * 168
    assert pools["p5.48xlarge"].figures.allocated_hours == 672 + 336
    assert pools["p5.48xlarge"].unallocated_hours == 127 * 168 - 1008
    assert pools["trn1.32xlarge"].capacity_hours == 24 * 168
    assert pools["p5.48xlarge"].capacity_cost == 127 * 24 * (3 * 55_040_000 + 4 * 40_000_000)


def test_each_day_is_split_exactly_at_tokyo_midnight(week, org_a, p5):
    rows = {row.day: row for row in UsageDay.objects.filter(organization=org_a, pool=p5, day__range=WEEK_RANGE)}
    hour = 3_600_000_000
    assert rows[date(2027, 3, 8)].running_microseconds == 24 * hour
    assert rows[date(2027, 3, 9)].running_microseconds == 8 * hour
    assert rows[date(2027, 3, 10)].running_microseconds == 10 * hour + hour // 2
    assert rows[date(2027, 3, 12)].running_microseconds == 18 * hour  # open: up to the last poll that saw it
    assert rows[date(2027, 3, 13)].running_microseconds == 0
    assert (rows[date(2027, 3, 10)].usd_per_hour, rows[date(2027, 3, 11)].usd_per_hour) == (
        Decimal("55.04"),
        Decimal("40.00"),
    )


WEEK_RANGE = (date(2027, 3, 8), date(2027, 3, 14))


def snapshot():
    return sorted(
        UsageDay.objects.values_list(
            "organization_id", "pool_id", "day", "allocated_microseconds", "running_microseconds",
            "allocated_cost_micro_usd", "running_cost_micro_usd",
        )
    )  # fmt: skip


def test_rolling_up_again_changes_nothing(week):
    before = snapshot()
    with time_machine.travel(AFTER, tick=False):
        rollups.mark_everything()
        rollups.roll_up()
        rollups.roll_up()
    assert snapshot() == before


def test_only_marked_days_are_recomputed(week, org_a, p5):
    untouched = UsageDay.objects.get(organization=org_a, pool=p5, day=date(2027, 3, 9))
    with time_machine.travel(AFTER, tick=False):
        rollups.mark_days(org_a.pk, date(2027, 3, 12), date(2027, 3, 12))
        assert rollups.roll_up() == 1
    assert UsageDay.objects.get(pk=untouched.pk).computed_at == untouched.computed_at
    assert not UsageDirtyDay.objects.exists()


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's planner, which goes by the query alone")
def test_recomputing_today_reads_the_runs_reaching_today_not_every_run(week, org_a):
    """After a poll, the rollup reads the runs that ended today or are still open, through the (organization,
    ended_at) index: a year of runs costs it nothing (an ORDER BY, or a start bound on the open runs, made SQLite's
    planner walk (organization, started_at), every run the organization ever had)."""
    with time_machine.travel(AFTER, tick=False):
        rollups.mark_days(org_a.pk, date(2027, 3, 20))
        with CaptureQueriesContext(connection) as queries:
            assert rollups.roll_up() == 1
    reads = [query["sql"] for query in queries if 'FROM "workloads_nodeinterval"' in query["sql"]]
    assert len(reads) == 2
    for sql in reads:
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN QUERY PLAN {sql}")
            plan = " ".join(str(step) for step in cursor.fetchall())
        assert "INDEX interval_org_end" in plan, plan


def test_a_rate_change_reprices_the_days_it_covers_and_nothing_else(week, org_b, p5, manager):
    before = {row.day: row for row in UsageDay.objects.filter(organization=org_b, pool=p5)}
    with time_machine.travel(AFTER, tick=False):
        rates.add_rate(
            user=manager,
            instance_type=p5.instance_type,
            region="us-east-1",
            kind=RateCardEntry.Kind.NEGOTIATED,
            usd_per_hour=Decimal("30.00"),
            effective_from=date(2027, 3, 13),
        )
    after = {row.day: row for row in UsageDay.objects.filter(organization=org_b, pool=p5)}
    running_hours = {date(2027, 3, 13): 24, date(2027, 3, 14): 24, date(2027, 3, 15): 24, date(2027, 3, 16): 6}
    # Both branches below are taken: the repriced days, and days before the 13th that must stay as they were.
    assert set(running_hours) <= set(after) and min(after) < date(2027, 3, 13), sorted(after)
    for day, row in after.items():
        if day >= date(2027, 3, 13):
            assert row.usd_per_hour == Decimal("30.00") and row.rate_source == "negotiated"
            assert row.running_cost_micro_usd == running_hours.get(day, 0) * 30_000_000
        else:
            assert row.running_cost_micro_usd == before[day].running_cost_micro_usd
            assert row.computed_at == before[day].computed_at  # re-priced, not recomputed


def test_the_same_rate_twice_for_a_type_region_kind_and_day_is_refused(week, p5, manager):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError, match="already has a negotiated rate"):
        rates.add_rate(
            user=manager,
            instance_type=p5.instance_type,
            region="us-east-1",
            kind=RateCardEntry.Kind.NEGOTIATED,
            usd_per_hour=Decimal("39.00"),
            effective_from=date(2027, 3, 11),
        )
    assert RateCardEntry.objects.count() == 1


def test_node_intervals_outlive_their_cluster(org_a, p5):
    from tests.factories import ClusterFactory

    cluster = ClusterFactory(organization=org_a)
    interval = run(org_a, "p5.48xlarge", jst(2027, 3, 8), jst(2027, 3, 9), cluster=cluster)
    ClusterUsageDay.objects.create(
        organization=org_a, cluster=cluster, cluster_name=cluster.name, pool=p5, day=date(2027, 3, 8)
    )
    cluster.groups.all().delete()
    cluster.delete()
    interval.refresh_from_db()
    assert interval.cluster_id is None and NodeInterval.objects.count() == 1
    assert ClusterUsageDay.objects.get().cluster_name == cluster.name


def test_a_rows_clusters_add_up_to_it_on_the_grain(org_a, p5):
    """Three clusters ran twenty minutes each on a day: the row keeps 1.0000 h (60 min), each cluster a third of it
    on the grain (0.3333 + 0.3333 + 0.3334), adding up to the row exactly."""
    from tests.factories import ClusterFactory
    from workloads.usage.definitions import GRAIN

    clusters = [ClusterFactory(organization=org_a, name=f"c{n}") for n in range(3)]
    for n, cluster in enumerate(clusters):
        run(org_a, "p5.48xlarge", jst(2027, 3, 8, 10), jst(2027, 3, 8, 10, 20), cluster=cluster, instance=f"i-{n}")
    with time_machine.travel(AFTER, tick=False):
        rollups.mark_everything()
        rollups.roll_up()
    row = UsageDay.objects.get(organization=org_a, day=date(2027, 3, 8), running_microseconds__gt=0)
    parts = sorted(ClusterUsageDay.objects.values_list("running_microseconds", flat=True))
    assert row.running_microseconds == 10_000 * GRAIN  # an hour
    assert parts == [3_333 * GRAIN, 3_333 * GRAIN, 3_334 * GRAIN] and sum(parts) == row.running_microseconds
    assert row.running_cost_micro_usd == 55_040_000  # $55.04, to the cent


def test_the_migration_keeps_the_rows_already_there_as_the_rollup_does(org_a, p5):
    """Rows written before the rule (to the microsecond and micro-dollar) are kept to the grain and the cent,
    re-priced at their own rate, their clusters shared out of them, billed cost to the cent, and summed again."""
    from importlib import import_module

    from django.apps import apps

    from workloads.models import BilledCost, UsageWeek

    twenty_minutes = 20 * 60 * 1_000_000
    UsageDay.objects.create(
        organization=org_a, pool=p5, day=date(2027, 3, 8), allocated_microseconds=86_400_000_000,
        running_microseconds=3 * twenty_minutes, usd_per_hour=Decimal("55.04"), rate_source="catalog",
        allocated_cost_micro_usd=1_320_960_000, running_cost_micro_usd=55_040_000, computed_at=AFTER,
    )  # fmt: skip
    UsageDay.objects.create(
        organization=org_a, pool=p5, day=date(2027, 3, 9), running_microseconds=twenty_minutes,
        usd_per_hour=Decimal("55.04"), running_cost_micro_usd=18_346_667, computed_at=AFTER,
    )  # fmt: skip
    for n in range(3):
        ClusterUsageDay.objects.create(
            organization=org_a, pool=p5, day=date(2027, 3, 8), cluster_name=f"c{n}", running_microseconds=twenty_minutes
        )
    BilledCost.objects.create(
        organization=org_a, day=date(2027, 3, 8), instance_type="p5.48xlarge", cost_micro_usd=18_346_667,
        fetched_at=AFTER,
    )  # fmt: skip
    with time_machine.travel(AFTER, tick=False):
        import_module("workloads.migrations.0032_exact_usage_figures").keep_exact(apps, None)
    later = UsageDay.objects.get(day=date(2027, 3, 9))
    # Twenty minutes: 0.3333 h on the grain, × 55.04 = 18.3448, $18.34 to the cent (it was 18.346667).
    assert (later.running_microseconds, later.running_cost_micro_usd) == (3_333 * 360_000, 18_340_000)
    assert sorted(ClusterUsageDay.objects.values_list("running_microseconds", flat=True)) == [
        3_333 * 360_000, 3_333 * 360_000, 3_334 * 360_000,
    ]  # fmt: skip
    assert BilledCost.objects.get().cost_micro_usd == 18_350_000  # $18.346667 billed: $18.35
    week = UsageWeek.objects.get(organization=org_a)
    assert (week.running, week.running_cost) == (13_333 * 360_000, 55_040_000 + 18_340_000)
