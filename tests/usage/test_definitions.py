"""The definitions, checked by hand: program days in Asia/Tokyo, exact splits, revocation, rounding."""

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

from tests.usage.conftest import jst
from workloads.usage.definitions import (
    MICROSECONDS_PER_HOUR,
    allocated_microseconds,
    cost_micro_usd,
    split_by_day,
    utilization,
)

HOUR = MICROSECONDS_PER_HOUR


def test_a_program_day_starts_at_15_utc_the_day_before():
    # 14:00 UTC on the 9th is 23:00 in Tokyo on the 9th; 16:00 UTC is 01:00 on the 10th.
    parts = split_by_day(datetime(2027, 3, 9, 14, tzinfo=UTC), datetime(2027, 3, 9, 16, tzinfo=UTC))
    assert parts == {date(2027, 3, 9): 1 * HOUR, date(2027, 3, 10): 1 * HOUR}


def test_a_run_across_days_is_split_exactly_and_adds_up_to_the_whole():
    start, end = jst(2027, 3, 10, 13, 30, 0, 123456), jst(2027, 3, 12, 18, 0, 0, 1)
    parts = split_by_day(start, end)
    assert parts[date(2027, 3, 10)] == 10 * HOUR + 30 * 60 * 10**6 - 123456
    assert parts[date(2027, 3, 11)] == 24 * HOUR
    assert parts[date(2027, 3, 12)] == 18 * HOUR + 1
    assert sum(parts.values()) == (end - start) // timedelta(microseconds=1)


def test_an_allocation_holds_whole_days_and_stops_at_its_revocation():
    window = (jst(2027, 3, 8), jst(2027, 3, 15))
    full = allocated_microseconds(
        instance_count=2, starts_on=date(2027, 3, 10), ends_on=date(2027, 3, 31), revoked_at=None, window=window
    )
    assert full == 2 * 5 * 24 * HOUR  # the 10th to the 14th, last day of the week included
    revoked = allocated_microseconds(
        instance_count=2,
        starts_on=date(2027, 3, 10),
        ends_on=date(2027, 3, 31),
        revoked_at=jst(2027, 3, 12, 12),
        window=window,
    )
    assert revoked == 2 * 60 * HOUR


def test_utilization_and_cost():
    assert utilization(0, 0) is None
    assert utilization(1, 4) == Decimal("0.25")
    assert cost_micro_usd(3 * HOUR, Decimal("55.04")) == 165_120_000  # 165.12 USD
    assert cost_micro_usd(1, Decimal("55.04")) == 0  # a microsecond rounds to nothing, half-even
