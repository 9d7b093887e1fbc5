"""Chart averages: a partial first or current day or week is averaged over the part that has passed."""

from datetime import date, timedelta

from tests.usage.conftest import jst
from workloads.usage import charts
from workloads.usage.definitions import MICROSECONDS_PER_HOUR
from workloads.usage.reports import Figures


def figures(instances: int, hours: float) -> Figures:
    part = int(instances * hours * MICROSECONDS_PER_HOUR)
    return Figures(allocated=part, running=part // 2)


def test_a_partial_week_is_averaged_over_what_passed():
    # The program starts on a Friday; now is the next Tuesday at noon. 4 instances allocated all along.
    first, as_of = date(2027, 3, 5), jst(2027, 3, 9, 12)
    weeks = charts.weeks_between(first, as_of.date())
    assert weeks == [date(2027, 3, 1), date(2027, 3, 8)]
    by_week = {weeks[0]: figures(4, 3 * 24), weeks[1]: figures(4, 36)}
    chart = charts.pool_lines(10, weeks, by_week, first=first, as_of=as_of)
    full = charts.pool_lines(
        10, weeks, {w: figures(4, 7 * 24) for w in weeks}, first=date(2027, 3, 1), as_of=jst(2027, 3, 15)
    )
    # Both weeks draw at 4 instances: the same height as two full weeks of 4.
    assert [p.split(",")[1] for p in chart["allocated"].split()] == [p.split(",")[1] for p in full["allocated"].split()]
    assert len(set(p.split(",")[1] for p in chart["allocated"].split())) == 1


def test_todays_bar_is_averaged_over_the_hours_so_far():
    first, as_of = date(2027, 3, 8), jst(2027, 3, 9, 6)
    days = [first, first + timedelta(days=1)]
    chart = charts.daily_bars(days, {days[0]: figures(12, 24), days[1]: figures(12, 6)}, first=first, as_of=as_of)
    assert chart["bars"][0]["allocated_y"] == chart["bars"][1]["allocated_y"]
    assert chart["bars"][0]["running_h"] == chart["bars"][1]["running_h"] > 0


def test_the_pool_timelines_running_line_averages_today_over_the_hours_so_far(p5, org_a):
    """At 06:00 with 4 instances running since midnight, today reads 4, not the 1 a whole day's average gives."""
    from django.utils import timezone

    from workloads.models import UsageDay
    from workloads.usage.allocations import pool_running

    day = date(2027, 3, 9)
    for d, hours in ((day - timedelta(days=1), 24), (day, 6)):
        UsageDay.objects.create(
            organization=org_a, pool=p5, day=d, running_microseconds=4 * hours * MICROSECONDS_PER_HOUR,
            computed_at=timezone.now(),
        )  # fmt: skip
    running = pool_running(p5, first=day - timedelta(days=1), last=day, now=jst(2027, 3, 9, 6))
    assert running == {day - timedelta(days=1): 4, day: 4}
