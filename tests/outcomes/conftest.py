"""The outcomes tests' program and spending: 2027-01-04 – 2027-06-30 (Asia/Tokyo), rate 150 yen a dollar. Alpha ran,
a day's running cost: $100 from Jan 4 to Jan 17, then by week $1,500 (Jan 18–24), $500 (Jan 25–31), $2,000
(Feb 1–7), $1,000 (Feb 8–14), and $300 on Feb 15 (so far)."""

from datetime import date, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone

from tests.factories import CapacityPoolFactory, OrganizationFactory, ProgramFactory, WorkloadFactory
from workloads.training.models import ProgressHour, TrainingRun
from workloads.usage import summaries
from workloads.usage.models import UsageDay

USD = 1_000_000
B = 1_000_000_000
JST = ZoneInfo("Asia/Tokyo")
NOW = datetime(2027, 2, 15, 12, 0, tzinfo=JST)  # the tests' "now": Monday Feb 15, 12:00


def daily_cost(day: date) -> int:
    if day < date(2027, 1, 18):
        return 100
    if day == date(2027, 2, 15):
        return 300
    week = (day - date(2027, 1, 18)).days // 7
    return [1_500, 500, 2_000, 1_000][week]


@pytest.fixture
def program(db):
    return ProgramFactory(starts_on=date(2027, 1, 4), ends_on=date(2027, 6, 30), usd_exchange_rate=Decimal("150"))


@pytest.fixture
def alpha(program):
    organization = OrganizationFactory(name="Alpha Research", slug="alpha-lab")
    pool = CapacityPoolFactory(program=program)
    day = date(2027, 1, 4)
    while day <= date(2027, 2, 15):
        UsageDay.objects.create(
            organization=organization,
            pool=pool,
            day=day,
            running_cost_micro_usd=daily_cost(day) * USD,
            computed_at=timezone.now(),
        )
        day += timedelta(days=1)
    summaries.rebuild()  # the weekly summaries the usage pages read, from these rows
    return organization


@pytest.fixture
def trained(org):
    """A workload of `org` whose run has trained 600 B of its 1 T planned tokens, 50 B of them in the 7 days before
    NOW (its last point: 11:00)."""
    workload = WorkloadFactory(organization=org, target_tokens=1000 * B)
    run = TrainingRun.objects.create(
        organization=org, workload=workload, name="run-1", phase="pretraining", tokens=600 * B,
        first_point_at=NOW - timedelta(days=30), last_point_at=NOW - timedelta(hours=1),
    )  # fmt: skip
    hour = NOW - timedelta(days=2)
    ProgressHour.objects.create(
        organization=org, run=run, hour=hour, hour_number=int(hour.timestamp() // 3600), first_iteration=1,
        last_iteration=2, tokens_end=600 * B, iterations=2, new_tokens=50 * B, timed_tokens=50 * B,
        productive_seconds=3600,
    )  # fmt: skip
    return workload
