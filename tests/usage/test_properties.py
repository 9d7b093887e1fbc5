"""Property-based: whatever the runs, allocations, rate changes and period boundaries, the daily rollups add up
exactly to the raw overlap of each day kept on the grain, every row is on the grain and to the cent, a second
rollup changes nothing, and any partition of a range sums to the whole."""

from datetime import date, timedelta
from decimal import Decimal

import pytest
import time_machine
from django.db import transaction
from django.test import override_settings
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from portal.periods import day_start, days_between
from tenants.models import Organization
from tests.usage.conftest import allocate, jst, run
from workloads.models import RateCardEntry, UsageDay
from workloads.usage import rollups
from workloads.usage.capacity import pool_capacity
from workloads.usage.definitions import CENT, GRAIN, ONE_DAY, allocated_microseconds, cost_micro_usd, overlap, to_grain
from workloads.usage.periods import Period
from workloads.usage.rates import load_rates
from workloads.usage.reports import summed

pytestmark = pytest.mark.django_db
FIRST = date(2027, 3, 1)
AS_OF = jst(2027, 3, 25, 7, 30)  # mid-morning: today's figures run only up to now
US = 1_000_000

runs = st.lists(
    st.tuples(
        st.sampled_from(["alpha", "beta"]),
        st.sampled_from(["p5.48xlarge", "trn1.32xlarge", "m5.12xlarge"]),
        st.integers(0, 24 * 86_400 * US),  # start, µs after the 1st
        st.integers(1, 5 * 86_400 * US),  # duration
        st.booleans(),  # still open (counted to its last sighting)
    ),
    max_size=8,
)
allocations = st.lists(
    st.tuples(
        st.sampled_from(["alpha", "beta"]),
        st.sampled_from(["p5", "trn1"]),
        st.integers(1, 12),
        st.integers(0, 20),  # first day, days after the 1st
        st.integers(0, 15),  # length in days - 1
        st.one_of(st.none(), st.integers(0, 30 * 86_400 * US)),  # revoked at, µs after the 1st
    ),
    max_size=5,
)
rate_changes = st.lists(st.tuples(st.integers(0, 24), st.integers(1_000, 90_000)), max_size=3, unique_by=lambda r: r[0])
cuts = st.lists(st.integers(1, 23), max_size=4, unique=True)


def rows():
    fields = ("organization_id", "pool_id", "day", "allocated_microseconds", "running_microseconds")
    return sorted(UsageDay.objects.values_list(*fields, "running_cost_micro_usd"))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(runs=runs, allocations=allocations, rate_changes=rate_changes, cuts=cuts)
def test_rollups_add_up_exactly(p5, trn1, org_a, org_b, manager, runs, allocations, rate_changes, cuts):
    orgs, pools = {"alpha": org_a, "beta": org_b}, {"p5": p5, "trn1": trn1}
    start = jst(2027, 3, 1)
    with transaction.atomic(), time_machine.travel(AS_OF, tick=False):
        made_runs = []
        for number, (org, kind, offset, length, still_open) in enumerate(runs):
            begin, end = start + timedelta(microseconds=offset), start + timedelta(microseconds=offset + length)
            end = min(end, AS_OF)
            if end <= begin:
                continue
            made_runs.append(
                run(orgs[org], kind, begin, None if still_open else end, last_seen=end, instance=f"i-{number}")
            )
        made_allocations = []
        for org, pool, count, first, length, revoked in allocations:
            revoked_at = None if revoked is None else start + timedelta(microseconds=revoked)
            made_allocations.append(
                allocate(
                    orgs[org], pools[pool], count, FIRST + timedelta(days=first),
                    FIRST + timedelta(days=first + length), revoked_at=revoked_at,
                )
            )  # fmt: skip
        for day, cents in rate_changes:
            RateCardEntry.objects.create(
                instance_type=p5.instance_type, region="us-east-1", kind=RateCardEntry.Kind.NEGOTIATED,
                usd_per_hour=Decimal(cents) / 1000, effective_from=FIRST + timedelta(days=day),
            )  # fmt: skip
        rollups.mark_everything()
        rollups.roll_up()
        first_pass = rows()

        totals = summed(UsageDay.objects.all(), "organization_id", "pool_id")
        for org in orgs.values():
            for key, pool in pools.items():
                # Each day's exact overlap, kept on the grain (the daily row: definitions), then summed.
                expected_running = expected_allocated = 0
                for day in days_between(FIRST, AS_OF.date()):
                    window = (day_start(day), min(day_start(day + timedelta(days=1)), AS_OF))
                    expected_running += to_grain(
                        sum(
                            overlap(r.started_at, r.counted_until, *window)
                            for r in made_runs
                            if r.organization_id == org.pk and r.instance_type == pool.instance_type.api_name
                        )
                    )
                    expected_allocated += to_grain(
                        sum(
                            allocated_microseconds(
                                instance_count=a.instance_count, starts_on=a.starts_on, ends_on=a.ends_on,
                                revoked_at=a.revoked_at, window=window,
                            )
                            for a in made_allocations
                            if a.organization_id == org.pk and a.pool_id == pool.pk
                        )
                    )  # fmt: skip
                got = totals.get((org.pk, pool.pk))
                assert (got.running if got else 0) == expected_running, key
                assert (got.allocated if got else 0) == expected_allocated, key
        # Every daily row on the grain and to the cent: a sum of them is exact in hours to 4 places and cents.
        for row in UsageDay.objects.all():
            assert row.allocated_microseconds % GRAIN == 0 and row.running_microseconds % GRAIN == 0
            assert row.allocated_cost_micro_usd % CENT == 0 and row.running_cost_micro_usd % CENT == 0

        # Any partition of the range into periods sums to the whole.
        edges = [FIRST, *sorted(FIRST + timedelta(days=c) for c in cuts), date(2027, 3, 26)]
        parts = [Period("range", a, b - timedelta(days=1)) for a, b in zip(edges, edges[1:], strict=False)]
        for key in ("allocated", "running", "allocated_cost", "running_cost"):
            whole_sum = sum(getattr(f, key) for f in summed(UsageDay.objects.all(), "organization_id").values())
            part_sum = sum(
                getattr(f, key)
                for part in parts
                for f in summed(
                    UsageDay.objects.filter(day__gte=part.first, day__lte=part.last), "organization_id"
                ).values()
            )
            assert part_sum == whole_sum, key

        # A second rollup of everything changes nothing.
        rollups.mark_everything()
        rollups.roll_up()
        assert rows() == first_pass
        transaction.set_rollback(True)
    assert Organization.objects.count() == 2


def capacity_day_by_day(pool, period: Period, as_of) -> tuple[int, int]:
    """The pool's capacity and its cost as the definitions say it, one day at a time: each day up to `as_of`,
    priced at its own rate."""
    table = load_rates()
    capacity = cost = 0
    for day in days_between(max(period.first, pool.starts_on), min(period.last, pool.ends_on)):
        end = min(day_start(day + ONE_DAY), as_of)
        part = to_grain(pool.total_instances * overlap(day_start(day), end, day_start(day), end))  # as a daily row
        if part <= 0:
            break
        capacity += part
        cost += cost_micro_usd(part, table.rate(pool.instance_type_id, pool.region, day).usd_per_hour)
    return capacity, cost


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    window=st.tuples(st.integers(-10, 40), st.integers(0, 50)),  # the pool's first day, days after the 1st; length
    span=st.tuples(st.integers(-15, 45), st.integers(0, 60)),  # the period's
    as_of=st.one_of(  # seconds after the 1st's midnight, or a midnight
        st.integers(-10 * 86_400, 70 * 86_400), st.integers(-10, 70).map(lambda days: days * 86_400)
    ),
    changes=st.lists(
        st.tuples(st.integers(-5, 60), st.sampled_from(list(RateCardEntry.Kind)), st.integers(1_000, 90_000)),
        max_size=5,
        unique_by=lambda change: (change[0], change[1]),
    ),
    zone=st.sampled_from(["Asia/Tokyo", "Europe/Berlin"]),
)
# A rate changing on the period's last day, and on the day `as_of` falls in
@example(window=(0, 50), span=(0, 30), as_of=40 * 86_400, changes=[(30, "negotiated", 5_000)], zone="Asia/Tokyo")
@example(
    window=(0, 50), span=(0, 40), as_of=27 * 86_400 + 3_600, changes=[(27, "reserved", 5_000)], zone="Europe/Berlin"
)
def test_pool_capacity_is_the_sum_of_its_days(p5, window, span, as_of, changes, zone):
    """pool_capacity sums runs of whole days at one rate: exactly what pricing every day on its own gives, across
    rate changes of every kind, a period or a pool starting or ending anywhere, `as_of` before, inside or after
    them, and in a zone with daylight-saving days."""
    with transaction.atomic(), override_settings(TIME_ZONE=zone):
        for day, kind, cents in changes:
            RateCardEntry.objects.create(
                instance_type=p5.instance_type, region=p5.region, kind=kind,
                usd_per_hour=Decimal(cents) / 1000, effective_from=FIRST + timedelta(days=day),
            )  # fmt: skip
        p5.starts_on = FIRST + timedelta(days=window[0])
        p5.ends_on = p5.starts_on + timedelta(days=window[1])
        period = Period("range", FIRST + timedelta(days=span[0]), FIRST + timedelta(days=span[0] + span[1]))
        moment = day_start(FIRST) + timedelta(seconds=as_of)
        assert pool_capacity([p5], period, as_of=moment)[p5.pk] == capacity_day_by_day(p5, period, moment)
        transaction.set_rollback(True)
