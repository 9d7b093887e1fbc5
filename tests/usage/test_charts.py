"""Chart averages: a partial first or current day or week is averaged over the part that has passed."""

from datetime import date, timedelta

from tests.charts import series
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
    # Both weeks draw at 4 instances, like two full weeks of 4; running at half of it.
    assert series(chart.option, "allocated (week average)")["data"] == [4.0, 4.0]
    assert series(chart.option, "running (week average)")["data"] == [2.0, 2.0]
    assert series(chart.option, "capacity (pool total)")["data"] == [10, 10]
    assert chart.rows[1] == [("2027-W10", ""), "4.0", "2.0", "10"]  # the table says the same


def test_the_chosen_weeks_are_shaded_and_the_whole_program_is_not():
    first, as_of = date(2027, 3, 1), jst(2027, 3, 22)
    weeks = charts.weeks_between(first, as_of.date())
    chosen = charts.pool_lines(10, weeks, {}, first=first, as_of=as_of, chosen=(date(2027, 3, 8), date(2027, 3, 14)))
    assert series(chosen.option, "chosen period")["data"] == [None, 1, None, None]
    assert series(chosen.option, "chosen period")["tooltip"] == {"show": False}  # not a figure of the week
    whole = charts.pool_lines(10, weeks, {}, first=first, as_of=as_of, chosen=(first, as_of.date()))
    assert "chosen period" not in [s["name"] for s in whole.option["series"]]


def test_todays_bar_is_averaged_over_the_hours_so_far():
    first, as_of = date(2027, 3, 8), jst(2027, 3, 9, 6)
    days = [first, first + timedelta(days=1)]
    chart = charts.daily_bars(days, {days[0]: figures(12, 24), days[1]: figures(12, 6)}, first=first, as_of=as_of)
    assert series(chart.option, "allocated")["data"] == [12.0, 12.0]
    assert series(chart.option, "running")["data"] == [6.0, 6.0]
    assert chart.option["xAxis"]["data"] == ["2027-03-08", "2027-03-09"]
    assert chart.rows[1][4:6] == ["72.0", "36.0"]  # today's instance-hours so far, in the table


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
