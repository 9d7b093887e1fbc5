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


AFTER_OVER = jst(2027, 3, 16, 9)  # the Tuesday after week 2027-W10, when the figures below are read


@pytest.fixture
def ran_over(program, p5, trn1):
    """Omega ran over its allocation; Kappa left half of its own idle. Catalog prices: P5 $55.04, Trn1 $21.50.

    Omega: 1 × P5 allocated Mar 8–12 (5 × 24 = 120 instance-h, 5 × $1,320.96 = $6,604.80). Its nodes ran:
    n1 Mar 8 00:00 – Mar 14 00:00 (24 h a day, Mar 13 with nothing allocated); n2 Mar 9 09:45 – 24:00 (14.25 h:
    Mar 9 ran 38.25 instance-h); n3 and n4 twenty minutes each on Mar 11 and Mar 12 (10:00–10:20); n5 Mar 15
    00:00 – 06:00, in week W11, with nothing allocated.
    Kept per daily row (definitions): twenty minutes are 0.3333 h on the grain, so Mar 11 and Mar 12 ran
    24.3333 instance-h, $1,339.30 each (24.3333 × 55.04 = 1,339.3048, to the cent); Mar 9 ran $2,105.28
    (38.25 × 55.04); the other days $1,320.96.
    Week W10: running 72 + 38.25 + 2 × 24.3333 = 158.9166 h (132.4% of 120); running cost 3 × 1,320.96 +
    2,105.28 + 2 × 1,339.30 = $8,746.76; over allocation, per day running − allocated: 14.25 + 2 × 0.3333 + 24
    = 38.9166 h, $784.32 + 2 × $18.34 + $1,320.96 = $2,141.96; idle 0.
    (Rounded once on the total instead, the two twenty-minute days cost $2,678.6133: the page said $8,746.77
    while the per-day CSV summed to $8,746.78, and hours to a tenth per row summed to 158.8 against 158.9.)

    Kappa: 2 × Trn1 allocated Mar 8–14 (336 instance-h, $7,224.00); one node ran Mar 8 – Mar 15 00:00 (168 h,
    $3,612.00, 50.0%); idle 168 h, $3,612.00."""
    omega = OrganizationFactory(name="Omega Lab", slug="omega")
    kappa = OrganizationFactory(name="Kappa Lab", slug="kappa")
    allocate(omega, p5, 1, date(2027, 3, 8), date(2027, 3, 12), status=Allocation.Status.ACTIVE)
    allocate(kappa, trn1, 2, date(2027, 3, 8), date(2027, 3, 14), status=Allocation.Status.ACTIVE)
    run(omega, "p5.48xlarge", jst(2027, 3, 8), jst(2027, 3, 14), instance="n1")
    run(omega, "p5.48xlarge", jst(2027, 3, 9, 9, 45), jst(2027, 3, 10), instance="n2")
    run(omega, "p5.48xlarge", jst(2027, 3, 11, 10), jst(2027, 3, 11, 10, 20), instance="n3")
    run(omega, "p5.48xlarge", jst(2027, 3, 12, 10), jst(2027, 3, 12, 10, 20), instance="n4")
    run(omega, "p5.48xlarge", jst(2027, 3, 15), jst(2027, 3, 15, 6), instance="n5")
    run(kappa, "trn1.32xlarge", jst(2027, 3, 8), jst(2027, 3, 15), instance="k1")
    with time_machine.travel(AFTER_OVER, tick=False):
        rollups.mark_everything()
        rollups.roll_up()
    return omega, kappa
