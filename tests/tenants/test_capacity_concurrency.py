"""The pool invariant under real concurrent transactions on PostgreSQL."""

import threading
from datetime import date

import pytest
import time_machine
from django.core.exceptions import ValidationError
from django.db import connection, connections
from django.db.models import Sum

from tenants.capacity import ledger
from tenants.capacity.decisions import approve_request
from tenants.capacity.sweep import Span, peak_usage
from tenants.models import Allocation, CapacityRequest
from tests.factories import CapacityPoolFactory, CapacityRequestFactory, OrganizationFactory, ProgramFactory

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("catalog"),
    pytest.mark.postgresql("row locks"),
]

RACERS = 24


def race(targets) -> list:
    """Run every target at once, each in its own thread with its own database connection."""
    barrier = threading.Barrier(len(targets))
    results: list = [None] * len(targets)

    def run(i, target):
        try:
            connection.ensure_connection()  # connect first, so the race is in the transactions, not in connecting
            barrier.wait()
            results[i] = target()
        except Exception as exc:  # collected and asserted on below
            results[i] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i, t)) for i, t in enumerate(targets)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


@time_machine.travel(date(2026, 12, 1), tick=False)
def test_racing_approvals_never_overcommit_the_pool(manager):
    pool = CapacityPoolFactory(program=ProgramFactory(), total_instances=127, spare_instances=0)
    # 24 requests × 8 instances = 192 asked of 127, with staggered overlapping windows.
    requests = [
        CapacityRequestFactory(
            pool=pool,
            organization=OrganizationFactory(),
            instance_count=8,
            starts_on=date(2027, 1, 1 + i % 5),
            ends_on=date(2027, 3, 1 + i % 7),
        )
        for i in range(RACERS)
    ]

    results = race([lambda r=r: approve_request(user=manager, capacity_request=r) for r in requests])

    won = [r for r in results if isinstance(r, Allocation)]
    lost = [r for r in results if not isinstance(r, Allocation)]
    assert len(won) + len(lost) == RACERS
    assert all(isinstance(e, ValidationError) for e in lost), lost
    assert all("would overcommit" in e.message_dict["instance_count"][0] for e in lost)
    assert len(won) == 127 // 8  # every day of Jan 6 – Mar 1 is shared by all, so 15 fit and the 16th cannot

    allocations = Allocation.objects.filter(pool=pool)
    spans = [Span(a.starts_on, a.ends_on, a.instance_count) for a in allocations]
    assert peak_usage(spans, starts_on=pool.starts_on, ends_on=pool.ends_on).used <= pool.allocatable_instances
    assert allocations.aggregate(n=Sum("instance_count"))["n"] == 8 * len(won)
    assert CapacityRequest.objects.filter(status=CapacityRequest.Status.SUBMITTED).count() == len(lost)
    assert ledger.differences() == {}  # every winner's days reached the ledger in its own transaction


@time_machine.travel(date(2026, 12, 1), tick=False)
def test_the_same_request_approved_twice_at_once_gives_one_allocation(manager):
    pool = CapacityPoolFactory(program=ProgramFactory(), total_instances=127)
    request = CapacityRequestFactory(pool=pool, instance_count=8)
    results = race([lambda: approve_request(user=manager, capacity_request=request)] * 6)
    assert sum(isinstance(r, Allocation) for r in results) == 1
    assert Allocation.objects.count() == 1
    errors = [r for r in results if not isinstance(r, Allocation)]
    assert all("Only a submitted request can be decided" in str(e) for e in errors)
