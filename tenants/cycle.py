"""The dates a program can mean: within its funding cycle, or a stated margin around it
(settings.PROGRAM_DATE_MARGIN_DAYS). Every date a person or a script gives — a rate card entry, an estimate's
window, a capacity request, a decision, an allocation, a usage range, a review week, an action item's due day — is
checked here, so a year 0001 or 9999 is a clear error naming the field, never a re-pricing of two thousand years or
a $12 billion estimate.

`check_dates` raises Django's ValidationError keyed by field (forms show it on the field, the API answers 400
with it); `InCycle` is the same check as a field validator for forms and serializers.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db.models import Max, Min
from django.utils.deconstruct import deconstructible
from django.utils.formats import date_format
from django.utils.translation import gettext as _

# With no program yet there is no cycle to hold dates to; still refuse what nobody can mean.
NO_PROGRAM = (date(2000, 1, 1), date(2099, 12, 31))


@dataclass(frozen=True)
class Cycle:
    first: date  # the earliest day accepted (the cycle's start less the margin)
    last: date

    def __contains__(self, day: date) -> bool:
        return self.first <= day <= self.last

    def message(self) -> str:
        return _("Choose a day from %(first)s to %(last)s: the program's cycle and %(margin)s days around it.") % {
            "first": date_format(self.first, "Y-m-d"),
            "last": date_format(self.last, "Y-m-d"),
            "margin": settings.PROGRAM_DATE_MARGIN_DAYS,
        }


def program_cycle() -> Cycle:
    """The days accepted: every program's cycle (one query), widened by the margin on both sides."""
    from tenants.models import Program  # models import this module's validator

    bounds = Program.objects.aggregate(first=Min("starts_on"), last=Max("ends_on"))
    if bounds["first"] is None:
        return Cycle(*NO_PROGRAM)
    margin = timedelta(days=settings.PROGRAM_DATE_MARGIN_DAYS)
    try:
        first = bounds["first"] - margin
    except OverflowError:
        first = date.min
    try:
        last = bounds["last"] + margin
    except OverflowError:
        last = date.max
    return Cycle(first, last)


def check_dates(cycle: Cycle | None = None, **days: date | None) -> None:
    """Every given day within the cycle, or one ValidationError naming each field that is not."""
    cycle = cycle or program_cycle()
    errors = {name: cycle.message() for name, day in days.items() if day is not None and day not in cycle}
    if errors:
        raise ValidationError(errors)


@deconstructible
class InCycle:
    """A form or serializer field validator: the day lies within the program's cycle and margin."""

    def __call__(self, value: date | None) -> None:
        if value is None:
            return
        cycle = program_cycle()
        if value not in cycle:
            raise ValidationError(cycle.message(), code="outside_cycle")

    def __eq__(self, other) -> bool:
        return isinstance(other, InCycle)


IN_CYCLE = InCycle()
