"""Geometry of the usage charts (server-rendered SVG, like the pool timeline; portal.charts draws frames and
scales): the utilization heatmap per organization and week, each pool's capacity against allocated and running
over time, cost to date per organization, and an organization's allocated against running per day."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal

from django.utils.formats import date_format
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from portal.charts import Frame, ValueScale, nice_ceiling
from portal.periods import day_start, iso_week
from workloads.usage.definitions import MICROSECONDS_PER_HOUR, hours, usd
from workloads.usage.reports import Figures

DAY_MICROSECONDS = 24 * MICROSECONDS_PER_HOUR
# Utilization bands, low to high: a reviewer reads the colour before the number.
BANDS = [
    (Decimal("0.25"), "#d92d20", gettext_lazy("under 25%")),
    (Decimal("0.50"), "#f79009", gettext_lazy("25–50%")),
    (Decimal("0.75"), "#9fd4a8", gettext_lazy("50–75%")),
    (None, "#2e9f4a", gettext_lazy("75% and over")),
]
NO_ALLOCATION = "#eef1f4"


def elapsed(bucket: date, days: int, *, first: date, as_of: datetime) -> int:
    """Microseconds of the bucket (a day or a week) that count towards its average: from the period's first day
    to now at most, so a partial first or current bucket is not read as a drop."""
    start = max(day_start(bucket), day_start(first))
    end = min(day_start(bucket + timedelta(days=days)), as_of)
    return max((end - start) // timedelta(microseconds=1), 1)


def band(ratio: Decimal | None) -> str:
    if ratio is None:
        return NO_ALLOCATION
    for limit, color, _label in BANDS:
        if limit is None or ratio < limit:
            return color
    return BANDS[-1][1]


def percent(ratio: Decimal | None) -> str:
    return "—" if ratio is None else f"{ratio * 100:.0f}%"


@dataclass(frozen=True)
class Row:
    key: int
    label: str
    url: str = ""


HEATMAP_RIGHT = 48  # room for the last week's label ("26-W48" is about 40 px at 11 px), which was cut


def heatmap(
    rows: list[Row],
    weeks: list[date],
    cells: dict[tuple[int, date], Figures],
    *,
    chosen: tuple[date, date] | None = None,
) -> dict:
    """One row per organization, one column per ISO week, coloured by utilization; the weeks of the `chosen`
    period (first, last day) framed, so the chart says which weeks the table above is about."""
    label_w, row_h, top = 200, 22, 28
    cell_w = max(8, min(32, (960 - label_w - HEATMAP_RIGHT) // max(len(weeks), 1)))
    width = label_w + cell_w * len(weeks) + HEATMAP_RIGHT
    shapes = []
    for y_index, row in enumerate(rows):
        for x_index, week in enumerate(weeks):
            figures = cells.get((row.key, week))
            ratio = figures.utilization if figures else None
            detail = (
                _("%(org)s · %(week)s: no allocation") % {"org": row.label, "week": iso_week(week)}
                if ratio is None
                else _("%(org)s · %(week)s: %(pct)s (%(running)s of %(allocated)s instance-hours)")
                % {
                    "org": row.label,
                    "week": iso_week(week),
                    "pct": percent(ratio),
                    "running": f"{hours(figures.running):,.0f}",
                    "allocated": f"{hours(figures.allocated):,.0f}",
                }
            )
            shapes.append(
                {
                    "x": label_w + x_index * cell_w,
                    "y": top + y_index * row_h,
                    "w": cell_w - 2,
                    "h": row_h - 2,
                    "color": band(ratio),
                    "title": detail,
                }
            )
    every = max(1, (len(weeks) * 40) // max(width - label_w, 1) + 1)  # a label every few weeks, never crowded
    labels = [
        {"x": label_w + i * cell_w, "label": iso_week(week)[2:]} for i, week in enumerate(weeks) if i % every == 0
    ]
    chosen_x = [label_w + i * cell_w for i, week in enumerate(weeks) if chosen and _overlaps(week, 7, chosen)]
    height = top + row_h * max(len(rows), 1) + 4
    return {
        "width": width,
        "height": height,
        "label_w": label_w,
        "chosen": (
            {"x": chosen_x[0] - 1, "w": chosen_x[-1] - chosen_x[0] + cell_w, "y": top - 2, "h": height - top}
            if chosen_x and len(chosen_x) < len(weeks)
            else None
        ),
        "rows": [{"y": top + i * row_h + row_h / 2, "label": r.label, "url": r.url} for i, r in enumerate(rows)],
        "cells": shapes,
        "weeks": labels,
        "bands": [{"color": c, "label": label} for _limit, c, label in BANDS]
        + [{"color": NO_ALLOCATION, "label": _("no allocation")}],
    }


def _overlaps(bucket: date, days: int, chosen: tuple[date, date]) -> bool:
    return bucket <= chosen[1] and bucket + timedelta(days=days - 1) >= chosen[0]


def pool_lines(
    capacity: int,
    weeks: list[date],
    by_week: dict[date, Figures],
    *,
    first: date,
    as_of: datetime,
    chosen: tuple[date, date] | None = None,
) -> dict:
    """A pool's week-average instances: its capacity, what was allocated and what ran; a point per week carries
    the three values on hover, and the `chosen` period's weeks are shaded."""
    frame = Frame(height=200, bottom=36)
    values = ValueScale(frame, max(capacity, 1))
    step = frame.plot_w / max(len(weeks), 1)

    def x(index: int) -> float:
        return round(frame.left + step * (index + 0.5), 2)

    allocated, running, points = [], [], []
    for index, week in enumerate(weeks):
        figures = by_week.get(week, Figures())
        length = elapsed(week, 7, first=first, as_of=as_of)  # the first and current weeks are partial
        allocated_avg, running_avg = figures.allocated / length, figures.running / length
        allocated.append(f"{x(index)},{values.y(min(capacity, allocated_avg))}")
        running.append(f"{x(index)},{values.y(min(capacity, running_avg))}")
        points.append(
            {
                "x": round(frame.left + step * index, 2),
                "w": round(step, 2),
                "running_x": x(index),
                "running_y": values.y(min(capacity, running_avg)),
                "chosen": bool(chosen and _overlaps(week, 7, chosen)),
                "title": _("%(week)s: %(running)s running, %(allocated)s allocated, capacity %(capacity)s (instances)")
                % {
                    "week": iso_week(week),
                    "running": f"{running_avg:,.1f}",
                    "allocated": f"{allocated_avg:,.1f}",
                    "capacity": capacity,
                },
            }
        )
    if all(p["chosen"] for p in points):  # the whole program is chosen: nothing to set apart
        for p in points:
            p["chosen"] = False
    return {
        **frame.as_dict(),
        "y_capacity": values.y(capacity),
        "ticks_y": values.ticks(marks=(capacity,), count=4),
        "allocated": " ".join(allocated),
        "running": " ".join(running),
        "points": points,
        "labels": [
            {"x": x(i), "label": iso_week(w)[2:]} for i, w in enumerate(weeks) if i % max(1, len(weeks) // 8) == 0
        ],
    }


def cost_bars(rows: list[tuple[Row, Figures]]) -> dict:
    """Per organization: allocated cost over the chosen period, with the part that ran filled in."""
    label_w, bar_h, gap, right = 200, 16, 8, 180  # right: room for "$1,234,567 / $1,234,567"
    top = 8
    most = max((f.allocated_cost for _row, f in rows), default=0) or 1
    plot_w = 960 - label_w - right
    bars = []
    for index, (row, figures) in enumerate(rows):
        y = top + index * (bar_h + gap)
        bars.append(
            {
                "y": y,
                "label_y": y + bar_h / 2,
                "label": row.label,
                "url": row.url,
                "allocated_w": round(plot_w * figures.allocated_cost / most, 2),
                "running_w": round(plot_w * min(figures.running_cost, figures.allocated_cost) / most, 2),
                "amount": f"${usd(figures.allocated_cost):,.0f}",
                "ran": f"${usd(figures.running_cost):,.0f}",
                "amount_x": label_w + round(plot_w * figures.allocated_cost / most, 2) + 6,
            }
        )
    return {
        "width": 960,
        "height": top + len(rows) * (bar_h + gap) + 4,
        "label_w": label_w,
        "bar_h": bar_h,
        "bars": bars,
    }


def daily_bars(
    days: list[date], by_day: dict[date, Figures], *, first: date, as_of: datetime, weekly: bool = False
) -> dict:
    """Allocated (outline) against running (filled) per day — or per week when the period is long — as the
    average number of instances over the part of the day or week that has passed."""
    frame = Frame(height=240)
    lengths = {day: elapsed(day, 7 if weekly else 1, first=first, as_of=as_of) for day in days}
    most = max([max(f.allocated, f.running) / lengths.get(day, DAY_MICROSECONDS) for day, f in by_day.items()] + [1])
    values = ValueScale(frame, nice_ceiling(max(float(most), 1.0), count=4))  # the axis ends on a round tick
    band_w = frame.plot_w / max(len(days), 1)
    bars = []
    for index, day in enumerate(days):
        figures = by_day.get(day, Figures())
        x = round(frame.left + band_w * index, 2)
        allocated_avg, running_avg = figures.allocated / lengths[day], figures.running / lengths[day]
        bars.append(
            {
                "x": x,
                "w": round(max(band_w - 1, 0.5), 2),
                "allocated_y": values.y(allocated_avg),
                "allocated_h": round(values.y(0) - values.y(allocated_avg), 2),
                "running_y": values.y(running_avg),
                "running_h": round(values.y(0) - values.y(running_avg), 2),
                "title": _("%(day)s: %(running)s of %(allocated)s instance-hours ran")
                % {
                    "day": iso_week(day) if weekly else date_format(day, "Y-m-d"),
                    "running": f"{hours(figures.running):,.1f}",
                    "allocated": f"{hours(figures.allocated):,.1f}",
                },
            }
        )
    every = max(1, len(days) // 8)
    return {
        **frame.as_dict(),
        "bars": bars,
        "ticks_y": values.ticks(count=4),
        "labels": [
            {
                "x": round(frame.left + band_w * (i + 0.5), 2),
                "label": iso_week(d)[2:] if weekly else date_format(d, "m-d"),
            }
            for i, d in enumerate(days)
            if i % every == 0
        ],
    }


def weeks_between(first: date, last: date) -> list[date]:
    monday = first - timedelta(days=first.weekday())
    weeks = []
    while monday <= last:
        weeks.append(monday)
        monday += timedelta(days=7)
    return weeks
