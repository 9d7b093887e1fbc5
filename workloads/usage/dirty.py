"""Marking an organization's days whose figures moved, for the rollup (workloads.usage.rollups) to recompute:
whatever moves a figure calls `mark_days` in the same transaction."""

from __future__ import annotations

from datetime import date

from portal.periods import today
from workloads.usage.definitions import days_between
from workloads.usage.models import UsageDirtyDay


def mark_days(organization_id: int, first: date, last: date | None = None) -> None:
    """The organization's figures from `first` to `last` (default: today) changed; days after today are not
    rolled up yet, and get marked when they come (`mark_current_days`)."""
    mark_days_from({organization_id: first}, last=last)


def mark_days_from(firsts: dict[int, date], *, last: date | None = None) -> None:
    """`mark_days` for several organizations in one write: each from its own first day (a poll batch's)."""
    last = min(last or today(), today())
    rows = [
        UsageDirtyDay(organization_id=organization_id, day=day)
        for organization_id, first in firsts.items()
        for day in days_between(first, last)
    ]
    if rows:
        UsageDirtyDay.objects.bulk_create(rows, ignore_conflicts=True)
