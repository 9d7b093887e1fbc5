"""Program time. The program runs in one timezone (settings.TIME_ZONE, Asia/Tokyo): its days start at
midnight there, and its weeks are ISO weeks, Monday 00:00 to the next Monday 00:00 there."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime, time, timedelta

from django.utils import timezone


def today() -> date:
    """Today in the program's timezone."""
    return timezone.localdate()


def week_of(day: date) -> date:
    """The Monday of `day`'s ISO week."""
    return day - timedelta(days=day.weekday())


def as_date(value: date | datetime) -> date:
    """A day truncated in SQL (TruncWeek, TruncMonth): a date, or a datetime on some backends."""
    return value.date() if isinstance(value, datetime) else value


def this_week() -> date:
    return week_of(today())


def parse_iso_week(value: str) -> date:
    """'2027-W05' -> the Monday of that week; ValueError for anything else."""
    year, _sep, week = value.partition("-W")
    if not (year.isdigit() and week.isdigit() and len(year) == 4 and len(week) == 2):
        raise ValueError(value)
    if not 1970 <= int(year) <= 9998:  # dates around the week must exist too
        raise ValueError(value)
    return date.fromisocalendar(int(year), int(week), 1)


def iso_week(day: date) -> str:
    year, week, _day = day.isocalendar()
    return f"{year}-W{week:02d}"


def day_start(day: date) -> datetime:
    """Midnight at the start of `day`, program time, as an aware datetime."""
    return timezone.make_aware(datetime.combine(day, time.min), timezone.get_default_timezone())


def week_bounds(week_start: date) -> tuple[datetime, datetime]:
    starts_at = day_start(week_start)
    return starts_at, day_start(week_start + timedelta(days=7))


def days_between(first: date, last: date) -> Iterator[date]:
    """Every day from `first` to `last`, both included."""
    day = first
    while day <= last:
        yield day
        day += timedelta(days=1)
