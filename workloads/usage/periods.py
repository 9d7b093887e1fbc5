"""The period a usage page, export or API call is about: an ISO week, a month, the program to date, or a custom
range of days — parsed once, with an error that names the field when the input makes no sense."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.core.exceptions import ValidationError
from django.utils.formats import date_format
from django.utils.http import urlencode
from django.utils.translation import gettext as _

from portal.periods import day_start, iso_week, parse_iso_week, week_of
from tenants.cycle import check_dates
from tenants.models import Program

MAX_DAYS = 3 * 366  # a range over three years is refused: nobody reviews that, and it is an easy way to load the DB
MONTH = re.compile(r"^(\d{4})-(\d{2})$")


class PeriodError(ValueError):
    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field, self.message = field, message


@dataclass(frozen=True)
class Period:
    kind: str  # "week", "month", "program" or "range"
    first: date
    last: date  # inclusive

    @property
    def key(self) -> str:
        """What the URL carries (?period=…), so a period can be shared."""
        if self.kind == "week":
            return iso_week(self.first)
        if self.kind == "month":
            return f"{self.first:%Y-%m}"
        if self.kind == "program":
            return "program"
        return "range"

    @property
    def file_label(self) -> str:
        """The period in a file name: 2027-W10, 2027-03, or its first and last days for the program and a range."""
        if self.kind in ("week", "month"):
            return self.key
        return f"{self.first.isoformat()}_{self.last.isoformat()}"

    @property
    def query(self) -> dict[str, str]:
        if self.kind == "range":
            return {"period": "range", "start": self.first.isoformat(), "end": self.last.isoformat()}
        return {"period": self.key}

    @property
    def query_string(self) -> str:
        return urlencode(self.query)

    @property
    def label(self) -> str:
        if self.kind == "week":
            return _("Week %(week)s (%(first)s – %(last)s)") % {
                "week": iso_week(self.first),
                "first": date_format(self.first, "Y-m-d"),
                "last": date_format(self.last, "Y-m-d"),
            }
        if self.kind == "month":
            return date_format(self.first, "Y-m")
        if self.kind == "program":
            return _("Program to date (%(first)s – %(last)s)") % {
                "first": date_format(self.first, "Y-m-d"),
                "last": date_format(self.last, "Y-m-d"),
            }
        return f"{date_format(self.first, 'Y-m-d')} – {date_format(self.last, 'Y-m-d')}"

    @property
    def whole_weeks(self) -> bool:
        """From a Monday to a Sunday (a week, or a range of weeks; so is the period before it): its figures can be
        read from the weekly summaries (workloads.usage.summaries) instead of the daily rows."""
        return self.first.weekday() == 0 and self.last.weekday() == 6

    @property
    def days(self) -> int:
        return (self.last - self.first).days + 1

    def bounds(self, as_of: datetime) -> tuple[datetime, datetime]:
        """The period as moments, never past `as_of` (figures are to date)."""
        return day_start(self.first), min(day_start(self.last + timedelta(days=1)), as_of)

    def previous(self) -> Period | None:
        """The period before, to compare against: last week, last month, the same number of days before."""
        if self.kind == "week":
            return Period("week", self.first - timedelta(days=7), self.first - timedelta(days=1))
        if self.kind == "month":
            last = self.first - timedelta(days=1)
            return Period("month", last.replace(day=1), last)
        if self.kind == "range":
            return Period("range", self.first - timedelta(days=self.days), self.first - timedelta(days=1))
        return None


def _date(value: str, field: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise PeriodError(field, _("Enter a date as YYYY-MM-DD.")) from None


def _in_cycle(**days: date) -> None:
    """A period asked for lies within the program's cycle and margin (tenants.cycle), or a PeriodError naming the
    field."""
    try:
        check_dates(**days)
    except ValidationError as error:
        field, messages = next(iter(error.message_dict.items()))
        raise PeriodError(field, messages[0]) from None


def parse_period(params, *, program: Program | None, today: date) -> Period:
    """From ?period=2027-W05 | 2027-02 | program | range&start=…&end=…; the current week when none is given."""
    value = (params.get("period") or "").strip()
    if not value and (params.get("start") or params.get("end")):
        value = "range"  # dates typed without choosing a period: the dates are the range asked for
    if not value:
        monday = week_of(today)
        return Period("week", monday, monday + timedelta(days=6))
    if value == "program":
        if program is None:
            raise PeriodError("period", _("There is no program yet."))
        return Period("program", program.starts_on, min(program.ends_on, max(today, program.starts_on)))
    if value == "range":
        first = _date(params.get("start") or "", "start")
        last = _date(params.get("end") or "", "end")
        if last < first:
            raise PeriodError("end", _("The end must not be before the start."))
        if (last - first).days + 1 > MAX_DAYS:
            raise PeriodError("end", _("Choose a range of at most three years."))
        _in_cycle(start=first, end=last)
        return Period("range", first, last)
    if "-W" in value:
        try:
            monday = parse_iso_week(value)
        except ValueError:
            raise PeriodError("period", _("Give an ISO week such as 2027-W05.")) from None
        _in_cycle(period=monday)
        return Period("week", monday, monday + timedelta(days=6))
    if match := MONTH.match(value):
        year, month = int(match[1]), int(match[2])
        if not (1 <= month <= 12 and 1970 <= year <= 9998):
            raise PeriodError("period", _("Give a month such as 2027-02."))
        first = date(year, month, 1)
        last = (first.replace(day=28) + timedelta(days=4)).replace(day=1) - timedelta(days=1)
        _in_cycle(period=first)
        return Period("month", first, last)
    raise PeriodError(
        "period", _("Unknown period: give an ISO week (2027-W05), a month (2027-02), “program” or “range”.")
    )
