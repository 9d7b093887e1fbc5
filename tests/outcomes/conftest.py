"""The outcomes tests' program and spending: 2027-01-04 – 2027-06-30 (Asia/Tokyo), rate 150 yen a dollar. Alpha ran,
a day's running cost: $100 from Jan 4 to Jan 17, then by week $1,500 (Jan 18–24), $500 (Jan 25–31), $2,000
(Feb 1–7), $1,000 (Feb 8–14), and $300 on Feb 15 (so far)."""

from datetime import date, timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from tests.factories import CapacityPoolFactory, OrganizationFactory, ProgramFactory
from workloads.usage import summaries
from workloads.usage.models import UsageDay

USD = 1_000_000


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
