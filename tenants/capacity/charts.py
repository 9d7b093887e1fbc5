"""The pool timeline's chart: allocations stacked by organization over the pool's window, against the
allocatable and total lines, and what ran each day (an ECharts option, see portal.charts)."""

from __future__ import annotations

from collections import defaultdict
from datetime import date, timedelta

from django.utils.translation import gettext as _

from portal import charts
from portal.charts import PALETTE
from portal.periods import days_between
from tenants.capacity.sweep import Span, usage_steps
from tenants.models import CapacityPool

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
    """The pool timeline: allocations stacked by organization over the pool window — the `ranked` largest from
    their allocations (`top`), the `others` together from the ledger's day totals — a value a day per series,
    the instances that actually ran each day (the average over the day) as a line, and the allocatable and total
    lines. The table beside it lists the runs of days where nothing changes: who holds what."""
    rest = other_spans(top, total_by_day, starts_on=pool.starts_on, ends_on=pool.ends_on)
    steps = usage_steps([*top, *rest], starts_on=pool.starts_on, ends_on=pool.ends_on)
    series = _series(ranked, names, others)
    keys = [s["key"] for s in series]
    days = list(days_between(pool.starts_on, pool.ends_on))
    index = {day: i for i, day in enumerate(days)}
    held = {key: [0] * len(days) for key in keys}
    rows, peak = [], 0
    for step in steps:
        counts: dict = defaultdict(int)
        for org_id, count in step.by_key.items():
            counts[org_id if org_id in held else "other"] += count
        for day in days_between(step.starts_on, step.ends_on):
            for key, count in counts.items():
                if key in held:  # "other" has no series when the ledger knows no organization beyond the ranked
                    held[key][index[day]] = count
        stack = sum(counts.values())
        peak = max(peak, stack)
        if stack:
            span = f"{step.starts_on}" if step.starts_on == step.ends_on else f"{step.starts_on} – {step.ends_on}"
            holders = ", ".join(f"{s['name']} {counts[s['key']]}" for s in series if counts.get(s["key"]))
            rows.append([(span, ""), f"{stack:,}", holders])

    labels = [day.isoformat() for day in days]
    allocatable = _("allocatable: %(n)s") % {"n": pool.allocatable_instances}
    total = _("total: %(n)s (spare above allocatable)") % {"n": pool.total_instances}
    ran = [None] * len(days)
    for day, count in (running or {}).items():
        if day in index:  # what ran, past the pool's total too (nodes beyond it are counted against it): never capped
            ran[index[day]] = round(float(count), 1)
    option = charts.base_option(filename=f"pool-{pool.instance_type.api_name}-{pool.region}")
    option["xAxis"] = charts.category_axis(labels, name=_("date (program time)"), boundaryGap=False)
    option["yAxis"] = charts.value_axis(_("instances"))
    option["series"] = [
        {
            "type": "line",
            "name": s["name"],
            "stack": "allocated",
            "step": "middle",
            "symbol": "none",
            "areaStyle": {"opacity": 0.85},
            "lineStyle": {"width": 0},
            "color": s["color"],
            "data": held[s["key"]],
        }
        for s in series
    ]
    option["series"] += [
        {
            "type": "line",
            "name": _("running (day average, from usage accounting)"),
            "data": ran,
            "symbol": "none",
            "color": charts.RUNNING,
            "lineStyle": {"width": 2.5},
            "z": 5,
            "markLine": {
                "symbol": "none",
                "silent": True,
                "lineStyle": {"color": charts.LIMIT, "type": "dotted"},
                "label": {"formatter": _("today"), "position": "end"},
                "data": [{"xAxis": today.isoformat()}] if today in index else [],
            },
        },
        # Allocatable is just under the total: its label goes under its line, the total's above its own.
        charts.reference_line(
            allocatable,
            pool.allocatable_instances,
            len(days),
            label=allocatable,
            color=charts.RUNNING,
            position="insideStartBottom",
        ),
        charts.reference_line(
            total,
            pool.total_instances,
            len(days),
            label=total,
            color=charts.TOTAL,
            dashed=False,
            position="insideEndTop",
        ),
    ]
    chart = charts.Chart(
        key="pool-timeline",
        label=_("Instances allocated per day, stacked by organization"),
        option=option,
        height=380 + charts.fit_legend(option),
        columns=[_("Days"), _("Allocated"), _("Held by")],
        rows=rows,
        unit=charts.unit(),
    )
    return {"chart": chart, "series": series, "peak": peak, "free_at_peak": pool.allocatable_instances - peak}


def plan_chart(pool: dict, *, today: date) -> charts.Chart | None:
    """A plan's chart for one pool: the free instances per day over the window before the plan (the ledger) and
    after it (what the plan grants taken out), against the allocatable line. `pool` is a plan's pool row:
    {"pool", "allocatable", "free": [[day, before, after], …]}."""
    days_free = [(date.fromisoformat(day), int(before), int(after)) for day, before, after in pool["free"]]
    if not days_free:
        return None
    labels = [day.isoformat() for day, _before, _after in days_free]
    # As the table says them: below zero where more is granted than the pool can allocate (over-committed).
    before = [b for _day, b, _after in days_free]
    after = [a for _day, _before, a in days_free]
    allocatable = _("allocatable: %(n)s") % {"n": pool["allocatable"]}
    option = charts.base_option(filename=f"plan-pool-{pool['pool']}")
    option["xAxis"] = charts.category_axis(labels, name=_("date (program time)"), boundaryGap=False)
    option["yAxis"] = charts.value_axis(_("instances free"))
    if min(before + after) < 0:
        del option["yAxis"]["min"]  # the axis reaches below zero to show it
    option["series"] = [
        {
            "type": "line",
            "name": _("free before the plan (the part above the green is what the plan grants)"),
            "step": "middle",
            "symbol": "none",
            "data": before,
            "color": "#f79009",
            "areaStyle": {"opacity": 0.35},
            "markLine": {
                "symbol": "none",
                "silent": True,
                "lineStyle": {"color": charts.LIMIT, "type": "dotted"},
                "label": {"formatter": _("today"), "position": "end"},
                "data": [{"xAxis": today.isoformat()}] if today.isoformat() in labels else [],
            },
        },
        {
            "type": "line",
            "name": _("still free after the plan"),
            "step": "middle",
            "symbol": "none",
            "data": after,
            "color": charts.RUNNING,
            "areaStyle": {"opacity": 0.35},
            "z": 3,
        },
        charts.reference_line(
            allocatable, pool["allocatable"], len(labels), label=allocatable, color=charts.TOTAL, dashed=True
        ),
    ]
    rows = [[(day.isoformat(), ""), f"{b:,}", f"{a:,}", f"{b - a:,}"] for day, b, a in days_free]
    return charts.Chart(
        key=f"plan-pool-{pool['pool']}",
        label=_("Instances free per day, before and after the plan"),
        option=option,
        height=320 + charts.fit_legend(option),
        columns=[_("Day"), _("Free before"), _("Free after"), _("Granted by the plan")],
        rows=rows,
        unit=charts.unit(),
    )
