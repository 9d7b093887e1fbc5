"""The pool ledger: whatever happens to allocations (granted, revoked, moved, resized, deleted), it equals the
sweep over the allocations on every day, and the headroom read from it equals the headroom read by sweeping."""

from datetime import date, timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tenants.capacity import ledger
from tenants.capacity.allocations import revoke_allocation
from tenants.capacity.models import PoolDay
from tenants.capacity.pools import headroom, pool_spans
from tenants.capacity.sweep import peak_usage
from tests.factories import AllocationFactory, CapacityPoolFactory, OrganizationFactory, ProgramFactory, instance_type

pytestmark = pytest.mark.django_db
START = date(2027, 1, 1)

operations = st.lists(
    st.tuples(
        st.sampled_from(["grant", "grant", "revoke", "move", "resize", "delete"]),
        st.integers(0, 1),  # pool
        st.integers(1, 12),  # instances
        st.integers(0, 170),  # first day, days after the program starts
        st.integers(0, 60),  # length - 1
        st.integers(0, 30),  # which earlier allocation (revoke, move, resize, delete)
    ),
    max_size=25,
)
windows = st.lists(st.tuples(st.integers(0, 180), st.integers(0, 90)), min_size=1, max_size=4)


@pytest.fixture
def pools(db):
    program = ProgramFactory(starts_on=START, ends_on=date(2027, 6, 30))
    return [
        CapacityPoolFactory(program=program, total_instances=127),
        CapacityPoolFactory(program=program, instance_type=instance_type("trn1.32xlarge"), total_instances=24),
    ]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operations=operations, windows=windows)
def test_the_ledger_is_the_sweep_of_the_allocations(pools, manager, operations, windows):
    with transaction.atomic():
        org = OrganizationFactory()
        made = []
        for action, pool, count, first, length, which in operations:
            starts_on = START + timedelta(days=first)
            if action == "grant" or not made:
                made.append(
                    AllocationFactory(
                        organization=org, pool=pools[pool], instance_count=count, starts_on=starts_on,
                        ends_on=starts_on + timedelta(days=length),
                    )
                )  # fmt: skip
                continue
            allocation = made[which % len(made)]
            allocation.refresh_from_db()
            if action == "revoke" and allocation.status != allocation.Status.REVOKED:
                revoke_allocation(user=manager, allocation=allocation, reason="property test")
            elif action == "move":
                allocation.starts_on, allocation.ends_on = starts_on, starts_on + timedelta(days=length)
                allocation.save()
            elif action == "resize":
                allocation.instance_count = count
                allocation.save()
            elif action == "delete":
                allocation.delete()
                made.remove(allocation)

        assert ledger.differences() == {}
        for pool in pools:
            for first, length in windows:
                starts_on = START + timedelta(days=first)
                ends_on = starts_on + timedelta(days=length)
                spans = pool_spans([pool.pk], starts_on=starts_on, ends_on=ends_on)[pool.pk]
                swept = peak_usage(spans, starts_on=starts_on, ends_on=ends_on)
                assert headroom(pool, starts_on=starts_on, ends_on=ends_on).peak == swept
        transaction.set_rollback(True)


def test_the_rebuild_command_reports_a_difference_and_repairs_it(pools):
    AllocationFactory(pool=pools[0], instance_count=5, starts_on=START, ends_on=START + timedelta(days=9))
    quiet = StringIO()
    call_command("rebuild_pool_ledger", "--check", stdout=quiet)
    assert "matches" in quiet.getvalue()

    PoolDay.objects.filter(pool=pools[0], day=START + timedelta(days=3)).update(allocated=99)
    PoolDay.objects.filter(pool=pools[0], day=START + timedelta(days=4)).delete()
    report = StringIO()
    with pytest.raises(SystemExit):
        call_command("rebuild_pool_ledger", "--check", stdout=report)
    assert "2 day(s) differ" in report.getvalue() and "ledger 99, allocations 5" in report.getvalue()

    call_command("rebuild_pool_ledger", stdout=StringIO())
    assert ledger.differences() == {}
    assert PoolDay.objects.filter(pool=pools[0]).count() == 10


def test_headroom_reads_days_not_allocations(pools, django_assert_max_num_queries):
    for day in range(0, 31, 3):  # 11 allocations, all still held on day 30
        AllocationFactory(
            pool=pools[0], instance_count=1, starts_on=START + timedelta(days=day), ends_on=START + timedelta(days=30)
        )
    with django_assert_max_num_queries(1):
        room = headroom(pools[0], starts_on=START, ends_on=START + timedelta(days=179))
    assert room.peak.used == 11 and room.peak.on == START + timedelta(days=30)


def test_the_largest_holders_are_ranked_by_instance_days_in_the_database(pools):
    from tenants.capacity.pools import largest_holders

    long_small = AllocationFactory(pool=pools[0], instance_count=2, starts_on=START, ends_on=START + timedelta(days=99))
    short_big = AllocationFactory(pool=pools[0], instance_count=50, starts_on=START, ends_on=START + timedelta(days=2))
    both_days = AllocationFactory(pool=pools[0], instance_count=1, starts_on=START, ends_on=START)
    AllocationFactory(pool=pools[0], organization=both_days.organization, instance_count=1, starts_on=START,
                      ends_on=START + timedelta(days=1))  # fmt: skip
    revoked = AllocationFactory(pool=pools[0], instance_count=99, starts_on=START, ends_on=START + timedelta(days=99))
    revoked.status = revoked.Status.REVOKED
    revoked.save()
    AllocationFactory(pool=pools[1], instance_count=99)  # another pool
    # Instance-days: 2 × 100 = 200, 50 × 3 = 150, 1 × 1 + 1 × 2 = 3 (days inclusive); revoked ones hold none.
    assert largest_holders(pools[0], limit=2) == ([long_small.organization_id, short_big.organization_id], 1)
    assert largest_holders(pools[0], limit=9)[1] == 0
