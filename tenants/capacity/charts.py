"""The pool timeline's chart: allocations stacked by organization over the pool's window, against the
allocatable and total lines. Geometry only (portal.charts draws the frame and scales); the template draws."""

from __future__ import annotations

from collections import defaultdict
from datetime import date, timedelta

from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _

from portal.charts import PALETTE, DayScale, Frame, ValueScale
from portal.periods import days_between
from tenants.capacity.sweep import Span, usage_steps
from tenants.models import CapacityPool

FRAME = Frame()
MAX_SERIES = 9  # the largest orgs get a colour each; the rest share "other organizations"


def _series(ranked: list[int], names: dict[int, str], others: int) -> list[dict]:
    """The largest organizations get a colour each, in order; the others share one."""
    series = [{"key": org_id, "name": names.get(org_id, "?"), "color": PALETTE[i]} for i, org_id in enumerate(ranked)]
    if others:
        series.append({"key": "other", "name": _("%(n)s other organizations") % {"n": others}, "color": PALETTE[-1]})
    return series


def other_spans(top: list[Span], total_by_day: dict[date, int], *, starts_on: date, ends_on: date) -> list[Span]:
    """What the rest of the organizations hold, from the ledger's day totals less the largest organizations'
    allocations, as runs of days with the same count: O(days), whatever the number of allocations."""
    held: dict[date, int] = defaultdict(int)
    for span in top:
        for day in days_between(span.starts_on, span.ends_on):
            held[day] += span.count
    runs: list[Span] = []
    for day in days_between(starts_on, ends_on):
        count = total_by_day.get(day, 0) - held.get(day, 0)
        if count > 0 and runs and runs[-1].count == count and runs[-1].ends_on == day - timedelta(days=1):
            runs[-1] = Span(runs[-1].starts_on, day, count, "other")
        elif count > 0:
            runs.append(Span(day, day, count, "other"))
    return runs


def pool_chart(
    pool: CapacityPool,
    top: list[Span],
    total_by_day: dict[date, int],
    names: dict[int, str],
    *,
    ranked: list[int],
    others: int,
    today: date,
    running: dict | None = None,
) -> dict:
    """Geometry of the pool timeline: allocations stacked by organization over the pool window — the `ranked`
    largest from their allocations (`top`), the `others` together from the ledger's day totals — as SVG shapes,
    and the instances that actually ran each day (the average over the day) as a line."""
    rest = other_spans(top, total_by_day, starts_on=pool.starts_on, ends_on=pool.ends_on)
    steps = usage_steps([*top, *rest], starts_on=pool.starts_on, ends_on=pool.ends_on)
    series = _series(ranked, names, others)
    colors = {s["key"]: s["color"] for s in series}
    days = DayScale(FRAME, pool.starts_on, pool.ends_on)
    values = ValueScale(FRAME, pool.total_instances)

    def rect(key, first: date, last: date, base: int, count: int) -> dict:
        x0, x1 = days.x(first), days.x(last + timedelta(days=1))
        top, bottom = values.y(base + count), values.y(base)
        # Attributes formatted here, once (numbers and our own palette's colours: nothing to escape); the template
        # writes one value per shape, unlocalized.
        attrs = mark_safe(  # noqa: S308
            f'x="{x0}" y="{top}" width="{round(x1 - x0, 2)}" height="{round(bottom - top, 2)}" fill="{colors[key]}"'
        )
        return {"attrs": attrs, "title": f"{first} – {last}: {count}"}

    # One shape per series and run of days where its count and the stack under it stay the same: the named
    # organizations (stacked first) change only at their own allocations' ends, whatever the others do.
    rects, peak = [], 0
    runs: dict = {}  # key → [first day, last day, base, count] of the shape being drawn
    for step in steps:
        stack = 0
        counts: dict = defaultdict(int)
        for org_id, count in step.by_key.items():
            counts[org_id if org_id in colors else "other"] += count
        for key in colors:
            count, run = counts.get(key, 0), runs.get(key)
            if run and (run[2], run[3]) == (stack, count) and run[1] + timedelta(days=1) == step.starts_on:
                run[1] = step.ends_on
            else:
                if run and run[3]:
                    rects.append(rect(key, *run))
                runs[key] = [step.starts_on, step.ends_on, stack, count]
            stack += count
        peak = max(peak, stack)
    rects.extend(rect(key, *run) for key, run in runs.items() if run[3])
    half_day = (days.x(pool.starts_on + timedelta(days=1)) - days.x(pool.starts_on)) / 2
    running_points = " ".join(
        f"{round(days.x(day) + half_day, 2)},{values.y(min(float(count), pool.total_instances))}"
        for day, count in sorted((running or {}).items())
        if days.contains(day)
    )
    return {
        **FRAME.as_dict(),
        "running": running_points,
        "free_h": round(values.y(0) - values.y(pool.allocatable_instances), 2),
        "y_allocatable": values.y(pool.allocatable_instances),
        "y_total": values.y(pool.total_instances),
        "rects": rects,
        "series": series,
        "ticks_y": values.ticks(marks=(pool.allocatable_instances, pool.total_instances)),
        "months": days.months(),
        "today_x": days.x(today) if days.contains(today) else None,
        "peak": peak,
        "free_at_peak": pool.allocatable_instances - peak,
    }
