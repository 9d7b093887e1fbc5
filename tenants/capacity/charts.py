"""The pool timeline's chart: allocations stacked by organization over the pool's window, against the
allocatable and total lines. Geometry only (portal.charts draws the frame and scales); the template draws."""

from __future__ import annotations

from collections import defaultdict
from datetime import date, timedelta

from django.utils.html import escape
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _

from portal.charts import PALETTE, DayScale, Frame, ValueScale
from portal.periods import days_between
from tenants.capacity.sweep import Span, usage_steps
from tenants.models import CapacityPool

FRAME = Frame()
ONE_DAY = timedelta(days=1)
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

    # One polygon per series — its band's top edge left to right, then its floor back — so a pool with
    # thousands of allocations draws as many shapes as one with ten; a transparent column per step on top
    # carries the tooltip: who holds what over those days. Written here, not by a template loop (a tag per
    # shape cost more than the rest of the page); numbers and our own palette, names escaped.
    labels = {s["key"]: s["name"] for s in series}
    tops: dict = {key: [] for key in colors}
    floors: dict = {key: [] for key in colors}
    columns, peak = [], 0
    y_floor, y_roof = values.y(0), values.y(pool.total_instances)
    previous_end = pool.starts_on - ONE_DAY
    for step in [*steps, None]:
        first = step.starts_on if step else pool.ends_on + ONE_DAY
        if first > previous_end + ONE_DAY:  # days nobody holds: every band lies flat on the floor
            x0, x1 = days.x(previous_end + ONE_DAY), days.x(first)
            for key in colors:
                tops[key] += [f"{x0},{y_floor}", f"{x1},{y_floor}"]
                floors[key] += [f"{x0},{y_floor}", f"{x1},{y_floor}"]
        if step is None:
            break
        previous_end = step.ends_on
        counts: dict = defaultdict(int)
        for org_id, count in step.by_key.items():
            counts[org_id if org_id in colors else "other"] += count
        x0, x1 = days.x(step.starts_on), days.x(step.ends_on + ONE_DAY)
        stack, held = 0, []
        for key in colors:
            count = counts.get(key, 0)
            top, floor = values.y(stack + count), values.y(stack)
            tops[key] += [f"{x0},{top}", f"{x1},{top}"]
            floors[key] += [f"{x0},{floor}", f"{x1},{floor}"]
            stack += count
            if count:
                held.append(f"{labels[key]} {count}")
        peak = max(peak, stack)
        span = f"{step.starts_on}" if step.starts_on == step.ends_on else f"{step.starts_on} – {step.ends_on}"
        tip = _("%(days)s: %(total)s allocated (%(held)s)") % {"days": span, "total": stack, "held": ", ".join(held)}
        columns.append(
            f'<rect x="{x0}" y="{y_roof}" width="{round(x1 - x0, 2)}" height="{round(y_floor - y_roof, 2)}" '
            f'class="hover"><title>{escape(tip)}</title></rect>'
        )
    bands = [
        f'<polygon points="{" ".join(tops[key] + floors[key][::-1])}" fill="{colors[key]}">'
        f"<title>{escape(labels[key])}</title></polygon>"
        for key in colors
    ]
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
        "shapes": mark_safe("".join(bands + columns)),  # noqa: S308 (numbers, our palette and escaped text)
        "series": series,
        "ticks_y": values.ticks(marks=(pool.allocatable_instances, pool.total_instances)),
        "months": days.months(),
        "today_x": days.x(today) if days.contains(today) else None,
        "peak": peak,
        "free_at_peak": pool.allocatable_instances - peak,
    }


def plan_chart(pool: dict, *, today: date) -> dict:
    """Geometry of a plan's chart for one pool: the free instances per day over the window, before the plan (the
    ledger) and after it (what the plan grants taken out), as two areas, against the allocatable line. `pool` is a
    plan's pool row: {"allocatable", "free": [[day, before, after], …]}."""
    days_free = [(date.fromisoformat(day), int(before), int(after)) for day, before, after in pool["free"]]
    if not days_free:
        return {}
    first, last = days_free[0][0], days_free[-1][0]
    days = DayScale(FRAME, first, last)
    top = max([pool["allocatable"], *(b for _d, b, _a in days_free)])
    values = ValueScale(FRAME, top)

    def area(pick) -> str:
        edge = []
        for day, before, after in days_free:
            y = values.y(max(pick(before, after), 0))
            edge += [f"{days.x(day)},{y}", f"{days.x(day + ONE_DAY)},{y}"]
        floor = values.y(0)
        return " ".join([*edge, f"{days.x(last + ONE_DAY)},{floor}", f"{days.x(first)},{floor}"])

    return {
        **FRAME.as_dict(),
        "before": area(lambda before, after: before),
        "after": area(lambda before, after: after),
        "y_allocatable": values.y(pool["allocatable"]),
        "ticks_y": values.ticks(marks=(pool["allocatable"],)),
        "months": days.months(),
        "today_x": days.x(today) if days.contains(today) else None,
        "granted_peak": max(before - after for _d, before, after in days_free),
    }
