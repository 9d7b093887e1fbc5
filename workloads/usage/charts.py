"""The usage charts (ECharts options, see portal.charts): the utilization heatmap per organization and week, each
pool's capacity against allocated and running over time, the chosen period's cost per organization, and an
organization's allocated against running per day."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal

from django.utils.formats import date_format
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from portal import charts
from portal.periods import day_start, iso_week
from workloads.usage.definitions import hours, usd
from workloads.usage.reports import Figures

# Utilization bands, low to high: a reviewer reads the colour before the number.
BANDS = [
    (Decimal("0.25"), "#d92d20", gettext_lazy("under 25%")),
    (Decimal("0.50"), "#f79009", gettext_lazy("25–50%")),
    (Decimal("0.75"), "#9fd4a8", gettext_lazy("50–75%")),
    (None, "#2e9f4a", gettext_lazy("75% and over")),
]
NO_ALLOCATION = "#eef1f4"
ALLOCATED_BAR = "#e8f1fb"


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


NO_ALLOCATION_VALUE = -1  # a heatmap cell's value when nothing was allocated that week


def heatmap(
    rows: list[Row],
    weeks: list[date],
    cells: dict[tuple[int, date], Figures],
    *,
    chosen: tuple[date, date] | None = None,
) -> charts.Chart:
    """One row per organization, one column per ISO week, coloured by utilization band (the legend picks bands);
    the weeks of the `chosen` period (first, last day) outlined, so the chart says which weeks the table above is
    about. Hovering a cell says its figures; clicking it opens the organization's usage."""
    names = [iso_week(week) for week in weeks]
    labels = [name[2:] for name in names]
    outline = bool(chosen) and not all(_overlaps(week, 7, chosen) for week in weeks)
    outlined = [outline and _overlaps(week, 7, chosen) for week in weeks]
    # Translated once, not once per cell (a year of weeks for 21 rows is over a thousand cells).
    no_allocation = _("%(org)s · %(week)s: no allocation")
    used = _("%(org)s · %(week)s: %(pct)s (%(running)s of %(allocated)s instance-hours)")
    data, table = [], []
    for y_index, row in enumerate(rows):
        line = [(row.label, row.url)]
        for x_index, week in enumerate(weeks):
            figures = cells.get((row.key, week))
            ratio = figures.utilization if figures else None
            detail = (
                no_allocation % {"org": row.label, "week": names[x_index]}
                if ratio is None
                else used
                % {
                    "org": row.label,
                    "week": names[x_index],
                    "pct": percent(ratio),
                    "running": f"{hours(figures.running):,.0f}",
                    "allocated": f"{hours(figures.allocated):,.0f}",
                }
            )
            cell: dict = {
                "value": [x_index, y_index, NO_ALLOCATION_VALUE if ratio is None else round(float(ratio) * 100, 1)],
                "name": detail,
            }
            if row.url:
                cell["url"] = row.url
            if outlined[x_index]:
                cell["itemStyle"] = {"borderColor": charts.TOTAL, "borderWidth": 2}
            data.append(cell)
            line.append(percent(ratio))
        table.append(line)
    pieces = [{"value": NO_ALLOCATION_VALUE, "color": NO_ALLOCATION, "label": str(_("no allocation"))}]
    low = 0
    for limit, color, label in BANDS:
        piece = {"gte": low, "color": color, "label": str(label)}
        if limit is not None:
            piece["lt"] = low = float(limit) * 100
        pieces.append(piece)
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
    """A pool's week-average instances: its capacity, what was allocated and what ran; hovering a week gives the
    three values, and the `chosen` period's weeks are shaded."""
    labels = [iso_week(week)[2:] for week in weeks]
    allocated, running, table = [], [], []
    for week in weeks:
        figures = by_week.get(week, Figures())
        length = elapsed(week, 7, first=first, as_of=as_of)  # the first and current weeks are partial
        allocated.append(round(float(figures.allocated / length), 1))
        running.append(round(float(figures.running / length), 1))
        table.append([(iso_week(week), ""), f"{allocated[-1]:,.1f}", f"{running[-1]:,.1f}", f"{capacity:,}"])
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
            "data": allocated,
            "symbol": "none",
            "color": charts.ALLOCATED,
            "lineStyle": {"width": 6, "color": charts.ALLOCATED},
            "z": 2,
        },
        {
            "type": "line",
            "name": _("running (week average)"),
            "data": running,
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
    if any(picked):
        option["series"].append(chosen_band(labels, picked, name=_("chosen period")))
    return charts.Chart(
        key=f"pool-lines-{key}",
        label=_("Weekly average instances: capacity, allocated and running"),
        option=option,
        height=260 + charts.fit_legend(option),
        columns=[_("ISO week"), _("allocated (week average)"), _("running (week average)"), _("capacity")],
        rows=table,
        unit=charts.unit(digits=1),
    )


def cost_bars(rows: list[tuple[Row, Figures]], *, period: str) -> charts.Chart:
    """Per organization: allocated cost over the chosen period, with the part that ran over it, and both amounts
    at the bar's end."""
    names, allocated, running, table = [], [], [], []
    for row, figures in rows:
        amount, ran = usd(figures.allocated_cost), usd(figures.running_cost)
        text = f"${ran:,.0f} / ${amount:,.0f}"
        names.append(row.label)
        item: dict = {"value": float(amount), "label": {"show": True, "position": "right", "formatter": text}}
        if row.url:
            item["url"] = row.url
        allocated.append(item)
        running.append({"value": float(min(ran, amount)), **({"url": row.url} if row.url else {})})
        table.append([(row.label, row.url), f"${amount:,.2f}", f"${ran:,.2f}", text])
    option = charts.base_option(filename="cost-per-organization")
    # Room for the organizations' names at the left and "$1,234,567 / $1,234,567" at the right.
    option["grid"].update(left=200, right=150, bottom=48, containLabel=False)
    option["xAxis"] = charts.value_axis(_("USD"), across=True)
    option["yAxis"] = {
        "type": "category",
        "data": names,
        "inverse": True,
        "axisLabel": {"width": 190, "overflow": "truncate"},
    }
    option["series"] = [
        {
            "type": "bar",
            "name": _("allocated cost (what the program commits)"),
            "data": allocated,
            "color": "#e8f1fb",
            "itemStyle": {"borderColor": "#1f5fae", "borderWidth": 0.5},
            "barWidth": 16,
            "label": {"color": charts.TEXT},
        },
        {
            "type": "bar",
            "name": _("running cost (what ran)"),
            "data": running,
            "color": charts.RUNNING,
            "barWidth": 16,
            "barGap": "-100%",  # over the allocated bar: the part of the commitment that ran
        },
    ]
    return charts.Chart(
        key="cost-chart",
        label=_("Allocated cost per organization in %(period)s (USD), the part that ran over it") % {"period": period},
        option=option,
        height=100 + 26 * max(len(rows), 1) + charts.fit_legend(option),
        columns=[_("Organization"), _("Allocated cost"), _("Running cost"), _("amounts in USD: running / allocated")],
        rows=table,
        unit=charts.unit(prefix="$"),
    )


def daily_bars(
    days: list[date], by_day: dict[date, Figures], *, first: date, as_of: datetime, weekly: bool = False
) -> charts.Chart:
    """Allocated (pale) against running (filled over it) per day — or per week when the period is long — as the
    average number of instances over the part of the day or week that has passed."""
    labels, allocated, running, table = [], [], [], []
    for day in days:
        figures = by_day.get(day, Figures())
        length = elapsed(day, 7 if weekly else 1, first=first, as_of=as_of)
        labels.append(iso_week(day) if weekly else date_format(day, "Y-m-d"))
        allocated.append(round(float(figures.allocated / length), 1))
        running.append(round(float(figures.running / length), 1))
        table.append(
            [
                (labels[-1], ""),
                f"{allocated[-1]:,.1f}",
                f"{running[-1]:,.1f}",
                f"{hours(figures.allocated):,.1f}",
                f"{hours(figures.running):,.1f}",
            ]
        )
    option = charts.base_option(filename="usage-by-week" if weekly else "usage-by-day")
    option["xAxis"] = charts.category_axis(labels, name=_("ISO week") if weekly else _("date (program time)"))
    option["yAxis"] = charts.value_axis(_("instances (average)"))
    option["series"] = [
        {"type": "bar", "name": _("allocated"), "data": allocated, "color": ALLOCATED_BAR, "barGap": "-100%",
         "itemStyle": {"borderColor": "#1f5fae", "borderWidth": 0.5}},
        {"type": "bar", "name": _("running"), "data": running, "color": charts.RUNNING, "barGap": "-100%"},
    ]  # fmt: skip
    return charts.Chart(
        key="usage-chart",
        label=_("Allocated against running, average instances"),
        option=option,
        height=300 + charts.fit_legend(option),
        columns=[
            _("ISO week") if weekly else _("Day"),
            _("allocated (average instances)"),
            _("running (average instances)"),
            _("allocated (instance-hours)"),
            _("running (instance-hours)"),
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
