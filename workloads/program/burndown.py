"""An allocation's burn-down: the instance-hours left of what was granted, day by day over its window — what ran
(AllocationUse.daily, the same shares as its figures to date), the even pace that would use the grant by its last
day, and from today the projection at the last 7 days' rate (AllocationUse.projected_share's rate). Over-use
shows as the remaining line reaching zero before the window ends; the table under the chart gives every week."""

from __future__ import annotations

from datetime import date, timedelta
from decimal import Decimal

from django.utils.translation import gettext as _

from portal import charts
from workloads.usage.allocations import AllocationUse
from workloads.usage.definitions import MICROSECONDS_PER_HOUR

PROJECTION = "#b54708"


def burn_down(use: AllocationUse, *, today: date) -> charts.Chart:
    allocation = use.allocation
    first, last = allocation.starts_on, allocation.ends_on
    days = [first + timedelta(days=n) for n in range((last - first).days + 1)]
    granted = Decimal(allocation.instance_hours)
    per_day = Decimal(allocation.instance_count * 24)
    rate = _recent_rate(use)  # instance-hours a day at the last 7 days' pace
    left, remaining, even, projected = granted, [], [], []
    for n, day in enumerate(days):
        even.append(_hours(granted - per_day * (n + 1)))
        if day < today:
            left -= Decimal(use.daily.get(day, 0)) / MICROSECONDS_PER_HOUR
            remaining.append(_hours(left))
            projected.append(None)
        else:
            remaining.append(None)
            ahead = rate * ((day - today).days + 1) if rate is not None else None
            projected.append(_hours(left - ahead) if ahead is not None else None)
    if today > first and today <= last + timedelta(days=1):
        projected[(today - first).days - 1] = remaining[(today - first).days - 1]  # the projection starts on the line
    labels = [day.strftime("%m-%d") for day in days]
    option = charts.base_option(filename=f"burn-down-{allocation.number}")
    option["xAxis"] = charts.category_axis(labels, name=_("day"), boundaryGap=False)
    option["yAxis"] = charts.value_axis(_("instance-hours left"))
    option["series"] = [
        _line(_("left of the grant"), remaining, charts.RUNNING, width=2.5),
        _line(_("at the last 7 days' rate"), projected, PROJECTION, dashed=True),
        _line(_("even use to the last day"), even, charts.ALLOCATED, width=4),
    ]
    table = [
        [(day.isoformat(), ""), _cell(remaining[n]), _cell(projected[n]), _cell(even[n])]
        for n, day in enumerate(days)
        if day.weekday() == 6 or day == last or (day == today - timedelta(days=1))
    ]
    return charts.Chart(
        key=f"burn-down-{allocation.pk}",
        label=_("Instance-hours left of allocation %(number)s, day by day") % {"number": allocation.number},
        option=option,
        height=240 + charts.fit_legend(option),
        columns=[_("day"), _("left of the grant"), _("at the last 7 days' rate"), _("even use to the last day")],
        rows=table,
        unit=charts.unit(digits=0, suffix=" " + _("instance-h")),
    )


def _recent_rate(use: AllocationUse) -> Decimal | None:
    if not use.recent_days:
        return None
    return Decimal(use.recent_running) / MICROSECONDS_PER_HOUR / use.recent_days


def _hours(value: Decimal) -> float:
    return float(round(max(value, Decimal(0)), 1))


def _cell(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"


def _line(name: str, data: list, color: str, *, width: float = 2, dashed: bool = False) -> dict:
    return {
        "type": "line",
        "name": name,
        "data": data,
        "symbol": "none",
        "connectNulls": False,
        "color": color,
        "lineStyle": {"width": width, "color": color, **({"type": "dashed"} if dashed else {})},
    }
