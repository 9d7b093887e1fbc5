"""The usage charts (ECharts options, see portal.charts): the utilization heatmap per organization and week, each
pool's capacity against allocated and running over time, the chosen period's cost per organization, and an
organization's allocated against running per day.

A chart shows the figures of the table beside it, read by the same functions (program_charts, org_chart: what the
pages call), never capped nor rounded further than the table: what ran beyond an allocation is drawn in a colour of
its own (portal.charts.OVER) with its own legend entry, as the pages flag it."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal

from django.urls import reverse
from django.utils.formats import date_format
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from portal import charts
from portal.periods import day_start, iso_week, today
from workloads.usage.formats import hours_text, percent_text, percent_value, usd_text
from workloads.usage.models import UsageDay, UsageWeek
from workloads.usage.over_time import daily, org_weeks, pool_weeks, weekly
from workloads.usage.periods import Period
from workloads.usage.reports import Figures, OrgRow, ProgramReport, total_of

# Utilization bands, low to high: a reviewer reads the colour before the number. Above them, over-allocation.
BANDS = [
    (Decimal("25"), "#d92d20", gettext_lazy("under 25%")),
    (Decimal("50"), "#f79009", gettext_lazy("25–50%")),
    (Decimal("75"), "#9fd4a8", gettext_lazy("50–75%")),
    (None, "#2e9f4a", gettext_lazy("75–100%")),
]
OVER_LABEL = gettext_lazy("over 100%: ran beyond the allocation")
NO_ALLOCATION = "#eef1f4"
ALLOCATED_BAR = "#e8f1fb"
WEEKLY_AFTER_DAYS = 120  # an organization's chart is per week past this many days


def elapsed(bucket: date, days: int, *, first: date, as_of: datetime) -> int:
    """Microseconds of the bucket (a day or a week) that count towards its average: from the period's first day
    to now at most, so a partial first or current bucket is not read as a drop."""
    start = max(day_start(bucket), day_start(first))
    end = min(day_start(bucket + timedelta(days=days)), as_of)
    return max((end - start) // timedelta(microseconds=1), 1)


def average(microseconds: int, length: int) -> Decimal:
    """Instance-time over a length of time: the average number of instances, to a tenth (as drawn and tabled)."""
    return (Decimal(microseconds) / Decimal(length)).quantize(Decimal("0.1"), rounding=ROUND_HALF_EVEN)


def band(ratio: Decimal | None) -> str:
    """The colour of a utilization, by the percentage shown (percent_text): over 100% is over-allocation's."""
    shown = percent_value(ratio)
    if shown is None:
        return NO_ALLOCATION
    if shown > 100:
        return charts.OVER
    for limit, color, _label in BANDS:
        if limit is None or shown < limit:
            return color
    return BANDS[-1][1]


@dataclass(frozen=True)
class Row:
    key: int
    label: str
    url: str = ""


NO_ALLOCATION_VALUE = -1  # a heatmap cell's value when nothing was allocated that week and nothing ran
# A cell's value when something ran that week with nothing allocated: beyond every percentage, so it takes the
# over-allocation piece's colour (the tooltip and the table say what it is).
UNALLOCATED_RUN_VALUE = 1_000_000


def heatmap(
    rows: list[Row],
    weeks: list[date],
    cells: dict[tuple[int, date], Figures],
    *,
    chosen: tuple[date, date] | None = None,
) -> charts.Chart:
    """One row per organization, one column per ISO week, coloured by utilization band (the legend picks bands),
    running over the allocation in a colour of its own; the weeks of the `chosen` period (first, last day)
    outlined, so the chart says which weeks the table above is about. Hovering a cell says its figures, as the
    tables write them; clicking it opens the organization's usage."""
    names = [iso_week(week) for week in weeks]
    labels = [name[2:] for name in names]
    outline = bool(chosen) and not all(_overlaps(week, 7, chosen) for week in weeks)
    outlined = [outline and _overlaps(week, 7, chosen) for week in weeks]
    # Translated once, not once per cell (a year of weeks for 21 rows is over a thousand cells).
    no_allocation = _("%(org)s · %(week)s: no allocation")
    ran_unallocated = _("%(org)s · %(week)s: no allocation; %(running)s instance-hours ran beyond it")
    used = _("%(org)s · %(week)s: %(pct)s (%(running)s of %(allocated)s instance-hours)")
    used_over = _(
        "%(org)s · %(week)s: %(pct)s (%(running)s of %(allocated)s instance-hours; %(over)s beyond the allocation)"
    )
    unallocated_cell = _("ran, none allocated")
    data, table = [], []
    for y_index, row in enumerate(rows):
        line = [(row.label, row.url)]
        for x_index, week in enumerate(weeks):
            figures = cells.get((row.key, week)) or Figures()
            words = {"org": row.label, "week": names[x_index]}
            if figures.allocated > 0:
                value = float(percent_value(figures.utilization))
                words.update(
                    pct=percent_text(figures.utilization),
                    running=hours_text(figures.running),
                    allocated=hours_text(figures.allocated),
                    over=hours_text(figures.over_allocation),
                )
                detail = (used_over if figures.over_allocated else used) % words
                text = percent_text(figures.utilization)
            elif figures.running > 0:  # ran with nothing allocated: all of it is over-allocation
                value, text = UNALLOCATED_RUN_VALUE, unallocated_cell
                detail = ran_unallocated % {**words, "running": hours_text(figures.running)}
            else:
                value, text, detail = NO_ALLOCATION_VALUE, percent_text(None), no_allocation % words
            cell: dict = {"value": [x_index, y_index, value], "name": detail}
            if row.url:
                cell["url"] = row.url
            if outlined[x_index]:
                cell["itemStyle"] = {"borderColor": charts.TOTAL, "borderWidth": 2}
            data.append(cell)
            line.append(text)
        table.append(line)
    pieces = [{"value": NO_ALLOCATION_VALUE, "color": NO_ALLOCATION, "label": str(_("no allocation"))}]
    low = 0
    for limit, color, label in BANDS:
        piece = {"gte": low, "color": color, "label": str(label)}
        if limit is not None:
            piece["lt"] = low = float(limit)
        else:
            piece["lte"] = 100
        pieces.append(piece)
    pieces.append({"gt": 100, "color": charts.OVER, "label": str(OVER_LABEL)})
    option = charts.base_option(filename="utilization-heatmap", legend=False)
    option["tooltip"] = {"trigger": "item", "formatter": "{b}", "confine": True}
    option["toolbox"].update(top="auto", bottom=0)  # at the top right it covered the last week's label
    # Room for the organizations' names at the left (cut at 190 px), the weeks above and the bands' legend under.
    option["grid"] = {"left": 200, "right": 24, "top": 28, "bottom": 40, "containLabel": False}
    option["xAxis"] = charts.category_axis(labels, position="top", splitArea={"show": False})
    option["xAxis"]["name"] = ""
    option["yAxis"] = {
        "type": "category",
        "data": [row.label for row in rows],
        "inverse": True,
        "axisLabel": {"width": 190, "overflow": "truncate"},
    }
    option["visualMap"] = {
        "type": "piecewise",
        "dimension": 2,
        "pieces": pieces,
        "orient": "horizontal",
        "left": 0,
        "bottom": 0,
        "itemGap": 16,
    }
    option["series"] = [
        {
            "type": "heatmap",
            "name": str(_("Utilization")),
            "data": data,
            "itemStyle": {"borderColor": "#fff", "borderWidth": 2, "borderRadius": 2},
        }
    ]
    return charts.Chart(
        key="heatmap",
        label=_("Running ÷ allocated instance-hours, per organization and ISO week"),
        option=option,
        height=90 + 26 * max(len(rows), 1),
        columns=[_("Organization"), *labels],
        rows=table,
    )


def _overlaps(bucket: date, days: int, chosen: tuple[date, date]) -> bool:
    return bucket <= chosen[1] and bucket + timedelta(days=days - 1) >= chosen[0]


def chosen_band(labels: list[str], chosen: list[bool], *, name: str) -> dict:
    """The chosen period's weeks shaded behind the lines: a bar filling each chosen week's column, on an axis of its
    own, left out of the tooltip."""
    return {
        "type": "bar",
        "name": name,
        "yAxisIndex": 1,
        "data": [1 if c else None for c in chosen],
        "barWidth": "100%",
        "color": charts.CHOSEN,
        "silent": True,
        "tooltip": {"show": False},
        "z": 0,
    }


def pool_lines(
    capacity: int,
    weeks: list[date],
    by_week: dict[date, Figures],
    *,
    first: date,
    as_of: datetime,
    chosen: tuple[date, date] | None = None,
    key: str = "pool",
) -> charts.Chart:
    """A pool's week-average instances: its capacity, what was allocated and what ran, and — when some ran beyond
    its organization's allocation — that part, in over-allocation's colour; hovering a week gives the values, and
    the `chosen` period's weeks are shaded."""
    labels = [iso_week(week)[2:] for week in weeks]
    allocated, running, over, table = [], [], [], []
    for week in weeks:
        figures = by_week.get(week, Figures())
        length = elapsed(week, 7, first=first, as_of=as_of)  # the first and current weeks are partial
        allocated.append(average(figures.allocated, length))
        running.append(average(figures.running, length))
        over.append(average(figures.over_allocation, length))
        table.append([(iso_week(week), ""), f"{allocated[-1]:,}", f"{running[-1]:,}", f"{over[-1]:,}", f"{capacity:,}"])
    beyond = any(over)
    picked = [bool(chosen and _overlaps(week, 7, chosen)) for week in weeks]
    if all(picked):  # the whole program is chosen: nothing to set apart
        picked = [False] * len(weeks)
    option = charts.base_option(filename=f"pool-weeks-{key}")
    option["grid"]["right"] = 32
    option["xAxis"] = charts.category_axis(labels, name=_("ISO week"))
    option["yAxis"] = [charts.value_axis(_("instances")), {"type": "value", "show": False, "min": 0, "max": 1}]
    option["series"] = [
        {
            "type": "line",
            "name": _("allocated (week average)"),
            "data": [float(v) for v in allocated],
            "symbol": "none",
            "color": charts.ALLOCATED,
            "lineStyle": {"width": 6, "color": charts.ALLOCATED},
            "z": 2,
        },
        {
            "type": "line",
            "name": _("running (week average)"),
            "data": [float(v) for v in running],
            "symbolSize": 6,
            "color": charts.RUNNING,
            "lineStyle": {"width": 2.5},
            "z": 3,
        },
        charts.reference_line(
            _("capacity (pool total)"),
            capacity,
            len(weeks),
            label=_("capacity %(n)s") % {"n": f"{capacity:,}"},
            color=charts.TOTAL,
        ),
    ]
    columns = [_("ISO week"), _("allocated (week average)"), _("running (week average)")]
    if beyond:
        option["series"].insert(
            2,
            {
                "type": "line",
                "name": _("over allocation (week average: ran beyond an allocation)"),
                "data": [float(v) for v in over],
                "symbolSize": 6,
                "color": charts.OVER,
                "lineStyle": {"width": 2, "type": "dashed"},
                "z": 3,
            },
        )
        columns.append(_("over allocation (week average)"))
    else:
        for line in table:
            del line[3]
    columns.append(_("capacity"))
    if any(picked):
        option["series"].append(chosen_band(labels, picked, name=_("chosen period")))
    return charts.Chart(
        key=f"pool-lines-{key}",
        label=_("Weekly average instances: capacity, allocated and running"),
        option=option,
        height=260 + charts.fit_legend(option),
        columns=columns,
        rows=table,
        unit=charts.unit(digits=1),
    )


def cost_bars(rows: list[tuple[Row, Figures]], *, period: str) -> charts.Chart:
    """Per organization over the chosen period: the allocated cost (pale), the running cost over it — all of it,
    past the allocated bar's end when it ran over — with its part that ran beyond an allocation in
    over-allocation's colour, and both amounts at the bar's end, to the cent as the table says them."""
    names, allocated, running, base, over, table = [], [], [], [], [], []
    for row, figures in rows:
        amount, ran, beyond = (Decimal(v) / 1_000_000 for v in (figures.allocated_cost, figures.running_cost,
                                                                 figures.over_allocation_cost))  # fmt: skip
        text = f"{usd_text(figures.running_cost)} / {usd_text(figures.allocated_cost)}"
        label = {"label": {"show": True, "position": "right", "formatter": text}}
        link = {"url": row.url} if row.url else {}
        names.append(row.label)
        # The amounts at the end of the longer bar: the allocated one, or the running one past it.
        allocated.append({"value": float(amount), **link, **(label if ran <= amount else {})})
        running.append({"value": float(ran), **link})
        base.append(float(ran - beyond))
        over.append({"value": float(beyond), **link, **(label if ran > amount else {})})
        table.append(
            [
                (row.label, row.url),
                usd_text(figures.allocated_cost),
                usd_text(figures.running_cost),
                usd_text(figures.over_allocation_cost),
                text,
            ]
        )
    option = charts.base_option(filename="cost-per-organization")
    # Room for the organizations' names at the left and "$1,234,567.89 / $1,234,567.89" at the right.
    option["grid"].update(left=200, right=220, bottom=48, containLabel=False)
    option["xAxis"] = charts.value_axis(_("USD"), across=True)
    option["yAxis"] = {
        "type": "category",
        "data": names,
        "inverse": True,
        "axisLabel": {"width": 190, "overflow": "truncate"},
    }
    bar = {"barWidth": 16, "barGap": "-100%"}  # the bars of an organization drawn over each other
    over_name = _("over allocation (ran beyond an allocation)")
    option["series"] = [
        {
            "type": "bar",
            "name": _("allocated cost (what the program commits)"),
            "data": allocated,
            "color": ALLOCATED_BAR,
            "itemStyle": {"borderColor": "#1f5fae", "borderWidth": 0.5},
            "label": {"color": charts.TEXT},
            **bar,
        },
        {"type": "bar", "name": _("running cost (what ran)"), "data": running, "color": charts.RUNNING, **bar},
        *charts.beyond(over_name, base=base, over=over, **bar),
    ]
    option["series"][-1]["label"] = {"color": charts.TEXT}
    option["legend"]["data"] = [series["name"] for series in option["series"] if series["name"]]
    return charts.Chart(
        key="cost-chart",
        label=_("Allocated and running cost per organization in %(period)s (USD), what ran beyond an allocation apart")
        % {"period": period},
        option=option,
        height=100 + 26 * max(len(rows), 1) + charts.fit_legend(option),
        columns=[
            _("Organization"),
            _("Allocated cost"),
            _("Running cost"),
            _("Over allocation"),
            _("amounts in USD: running / allocated"),
        ],
        rows=table,
        unit=charts.unit(prefix="$", digits=2),
    )


def daily_bars(
    days: list[date], by_day: dict[date, Figures], *, first: date, as_of: datetime, weekly: bool = False
) -> charts.Chart:
    """Allocated (pale) against running (filled over it, past it when it ran over) per day — or per week when the
    period is long — as the average number of instances over the part of the day or week that has passed; the part
    that ran beyond an allocation at the running bar's end, in over-allocation's colour."""
    labels, allocated, running, base, over, table = [], [], [], [], [], []
    for day in days:
        figures = by_day.get(day, Figures())
        length = elapsed(day, 7 if weekly else 1, first=first, as_of=as_of)
        labels.append(iso_week(day) if weekly else date_format(day, "Y-m-d"))
        allocated.append(average(figures.allocated, length))
        running.append(average(figures.running, length))
        over.append(average(figures.over_allocation, length))
        base.append(float(running[-1] - over[-1]))
        table.append(
            [
                (labels[-1], ""),
                f"{allocated[-1]:,}",
                f"{running[-1]:,}",
                f"{over[-1]:,}",
                hours_text(figures.allocated),
                hours_text(figures.running),
                hours_text(figures.over_allocation),
            ]
        )
    option = charts.base_option(filename="usage-by-week" if weekly else "usage-by-day")
    option["xAxis"] = charts.category_axis(labels, name=_("ISO week") if weekly else _("date (program time)"))
    option["yAxis"] = charts.value_axis(_("instances (average)"))
    bar = {"barGap": "-100%"}
    option["series"] = [
        {"type": "bar", "name": _("allocated"), "data": [float(v) for v in allocated], "color": ALLOCATED_BAR,
         "itemStyle": {"borderColor": "#1f5fae", "borderWidth": 0.5}, **bar},
        {"type": "bar", "name": _("running"), "data": [float(v) for v in running], "color": charts.RUNNING, **bar},
        *charts.beyond(_("over allocation (ran beyond an allocation)"), base=base, over=[float(v) for v in over],
                       **bar),
    ]  # fmt: skip
    option["legend"]["data"] = [series["name"] for series in option["series"] if series["name"]]
    return charts.Chart(
        key="usage-chart",
        label=_("Allocated against running, average instances"),
        option=option,
        height=300 + charts.fit_legend(option),
        columns=[
            _("ISO week") if weekly else _("Day"),
            _("allocated (average instances)"),
            _("running (average instances)"),
            _("over allocation (average instances)"),
            _("allocated (instance-hours)"),
            _("running (instance-hours)"),
            _("over allocation (instance-hours)"),
        ],
        rows=table,
        unit=charts.unit(digits=1),
    )


def weeks_between(first: date, last: date) -> list[date]:
    monday = first - timedelta(days=first.weekday())
    weeks = []
    while monday <= last:
        weeks.append(monday)
        monday += timedelta(days=7)
    return weeks


# --- What the pages draw: each chart's figures read by the functions its table reads ---------------------------


def program_charts(report: ProgramReport, *, user, shown: list[OrgRow], as_of: datetime) -> dict:
    """The program page's charts, for its period and the table's page of organizations (`shown`, the table's own
    rows). The weekly charts run from the program's start to the period's end (not past today), the period's weeks
    set apart; the cost chart is the period's, from the table's figures. The heatmap and the cost bars draw the
    shown organizations one by one and every other as one row, so they stay legible and bounded with 2,000
    organizations: the others' figures are the program's — the table's totals for the period, the pools' weeks
    for the heatmap — without the ones drawn (Figures.without)."""
    program, period = report.program, report.period
    first, last = program.starts_on, min(program.ends_on, period.last, today())
    last = max(last, first)
    org_rows = [
        Row(r.organization.pk, r.organization.name, reverse("usage:org", args=[r.organization.slug])) for r in shown
    ]
    ids = [row.key for row in org_rows]
    weeks = weeks_between(first, last)
    chosen = (period.first, period.last)
    # A year of weeks read from the summaries: 52 rows per organization drawn and per pool, whatever the number of
    # organizations.
    by_org_week = org_weeks(
        UsageWeek.objects.visible_to(user).filter(organization_id__in=ids),
        UsageDay.objects.visible_to(user).filter(organization_id__in=ids),
        first=first,
        last=last,
    )
    by_pool_week = pool_weeks(first=first, last=last)
    bars = [(row, r.figures) for row, r in zip(org_rows, shown, strict=True)]
    heat_rows = org_rows
    others = report.count - len(shown)
    if others:
        other_row = Row(0, _("Other organizations (%(count)s)") % {"count": f"{others:,}"})
        program_weeks: dict[date, list[Figures]] = defaultdict(list)
        drawn_weeks: dict[date, list[Figures]] = defaultdict(list)
        for (_pool, week), figures in by_pool_week.items():
            program_weeks[week].append(figures)
        for (_org, week), figures in by_org_week.items():
            drawn_weeks[week].append(figures)
        for week, figures in program_weeks.items():
            by_org_week[(0, week)] = total_of(figures).without(total_of(drawn_weeks[week]))
        heat_rows = [*org_rows, other_row]
        bars.append((other_row, report.totals.without(total_of(r.figures for r in shown))))
    return {
        "period": period,
        "through": last,
        "heatmap": heatmap(heat_rows, weeks, by_org_week, chosen=chosen),
        "pool_charts": [
            {
                "pool": p.pool,
                "chart": pool_lines(
                    p.pool.total_instances,
                    weeks,
                    {week: f for (pool_id, week), f in by_pool_week.items() if pool_id == p.pool.pk},
                    first=first,
                    as_of=as_of,
                    chosen=chosen,
                    key=str(p.pool.pk),
                ),
            }
            for p in report.pools
        ],
        "cost_chart": cost_bars(
            sorted(bars, key=lambda pair: (-pair[1].allocated_cost, pair[0].label)), period=period.label
        ),
    }


def org_chart(organization, *, period: Period, as_of: datetime) -> charts.Chart:
    """An organization's period day by day (week by week past WEEKLY_AFTER_DAYS), from its daily rows summed as its
    page's figures are (reports.summed)."""
    rows = UsageDay.objects.for_org(organization)
    last = min(period.last, today())
    if period.days > WEEKLY_AFTER_DAYS:
        weeks = weeks_between(period.first, last)
        by_week = weekly(rows, first=period.first, last=last, key="organization_id")
        by_week = {week: f for (_org, week), f in by_week.items()}
        return daily_bars(weeks, by_week, first=period.first, as_of=as_of, weekly=True)
    days = [period.first + timedelta(days=n) for n in range((last - period.first).days + 1)]
    by_day: dict[date, Figures] = {}
    for (day, _pool), figures in daily(rows, first=period.first, last=last).items():
        by_day.setdefault(day, Figures()).add(figures)
    return daily_bars(days, by_day, first=period.first, as_of=as_of)
