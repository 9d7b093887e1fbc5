"""Usage tests run in a program year with P5 and Trn1 pools in us-east-1; times are written in Asia/Tokyo."""

from datetime import date, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
import time_machine

from portal.periods import parse_iso_week
from tenants.models import Allocation
from tests.factories import AllocationFactory, CapacityPoolFactory, OrganizationFactory, ProgramFactory, instance_type
from workloads.models import NodeInterval, RateCardEntry
from workloads.usage import rates, rollups
from workloads.usage.periods import Period

JST = ZoneInfo("Asia/Tokyo")


def jst(*args) -> datetime:
    return datetime(*args, tzinfo=JST)


@pytest.fixture
def program(db):
    return ProgramFactory(starts_on=date(2027, 1, 1), ends_on=date(2027, 6, 30))


@pytest.fixture
def p5(program):
    return CapacityPoolFactory(
        program=program, total_instances=127, starts_on=program.starts_on, ends_on=program.ends_on
    )


@pytest.fixture
def trn1(program):
    return CapacityPoolFactory(
        program=program,
        instance_type=instance_type("trn1.32xlarge"),
        total_instances=24,
        starts_on=program.starts_on,
        ends_on=program.ends_on,
    )


@pytest.fixture
def org_a(db):
    return OrganizationFactory(name="Alpha Lab", slug="alpha")


@pytest.fixture
def org_b(db):
    return OrganizationFactory(name="Beta Lab", slug="beta")


def allocate(org, pool, count, first, last, **extra):
    return AllocationFactory(organization=org, pool=pool, instance_count=count, starts_on=first, ends_on=last, **extra)


def run(org, instance_type_name, start, end=None, *, last_seen=None, region="us-east-1", cluster=None, instance="i-1"):
    """A node run: closed at `end`, or open and last seen at `last_seen`."""
    return NodeInterval.objects.create(
        organization=org,
        cluster=cluster,
        instance_id=instance,
        instance_type=instance_type_name,
        region=region,
        started_at=start,
        ended_at=end,
        last_seen_at=end or last_seen,
    )


WEEK = Period("week", parse_iso_week("2027-W10"), parse_iso_week("2027-W10") + timedelta(days=6))  # Mar 8–14
AFTER = jst(2027, 3, 20, 9)


@pytest.fixture
def week(program, p5, trn1, org_a, org_b, manager):
    """Alpha: 4 × P5 all along, 2 × Trn1 from the 10th revoked on the 12th at noon; Beta: 2 × P5 from the 1st.
    Runs (Tokyo time): a1 from the 7th 20:00 to the 9th 08:00; a2 from the 10th 13:30, still open, last seen
    on the 12th 18:00 (the poller stopped); t1 the 10th 00:00 to the 12th noon; b1 from the 8th to the 16th
    06:00 (beyond the week); a controller node of Alpha (no pool: not counted). A negotiated P5 rate of 40.00
    from the 11th (catalog: P5 55.04, Trn1 21.50)."""
    allocate(org_a, p5, 4, date(2027, 1, 1), date(2027, 6, 30), status=Allocation.Status.ACTIVE)
    allocate(
        org_a,
        trn1,
        2,
        date(2027, 3, 10),
        date(2027, 3, 31),
        status=Allocation.Status.REVOKED,
        revoked_at=jst(2027, 3, 12, 12),
    )
    allocate(org_b, p5, 2, date(2027, 3, 1), date(2027, 3, 31), status=Allocation.Status.ACTIVE)
    run(org_a, "p5.48xlarge", jst(2027, 3, 7, 20), jst(2027, 3, 9, 8), instance="a1")
    run(org_a, "p5.48xlarge", jst(2027, 3, 10, 13, 30), last_seen=jst(2027, 3, 12, 18), instance="a2")
    run(org_a, "trn1.32xlarge", jst(2027, 3, 10), jst(2027, 3, 12, 12), instance="t1")
    run(org_b, "p5.48xlarge", jst(2027, 3, 8), jst(2027, 3, 16, 6), instance="b1")
    run(org_a, "m5.12xlarge", jst(2027, 3, 8), jst(2027, 3, 14), instance="controller")
    with time_machine.travel(AFTER, tick=False):
        rates.add_rate(
            user=manager,
            instance_type=p5.instance_type,
            region="us-east-1",
            kind=RateCardEntry.Kind.NEGOTIATED,
            usd_per_hour=Decimal("40.00"),
            effective_from=date(2027, 3, 11),
        )
        rollups.mark_everything()
        rollups.roll_up()


# The `week` fixture's running cost per organization and day, in micro-USD, by hand from its runs (hours × rate;
# P5 55.04 USD/h to the 10th, 40.00 from the 11th; Trn1 21.50; the controller has no pool and costs nothing here):
# alpha  8th: a1 24 h × 55.04                     = 1,320.96
#        9th: a1 8 h (to 08:00) × 55.04           =   440.32
#       10th: a2 10.5 h (from 13:30) × 55.04 = 577.92, t1 24 h × 21.50 = 516.00   → 1,093.92
#       11th: a2 24 h × 40.00 = 960.00,        t1 24 h × 21.50 = 516.00   → 1,476.00
#       12th: a2 18 h (last seen 18:00) × 40.00 = 720.00, t1 12 h × 21.50 = 258.00 → 978.00
#       13th, 14th: nothing                                              (week: 5,309.20)
# beta   8th–10th: b1 24 h × 55.04 = 1,320.96 a day; 11th–14th: 24 h × 40.00 = 960.00 a day (week: 7,802.88)
WEEK_RUNNING_COST = {
    "alpha": {
        date(2027, 3, 8): 1_320_960_000,
        date(2027, 3, 9): 440_320_000,
        date(2027, 3, 10): 1_093_920_000,
        date(2027, 3, 11): 1_476_000_000,
        date(2027, 3, 12): 978_000_000,
    },
    "beta": {
        **{date(2027, 3, day): 1_320_960_000 for day in (8, 9, 10)},
        **{date(2027, 3, day): 960_000_000 for day in (11, 12, 13, 14)},
    },
}
