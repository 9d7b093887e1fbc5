"""What every chart of the portal shares. Charts are drawn in the browser by Apache ECharts (vendored under
static/vendor/echarts/, started by static/js/charts.js); the chart modules compute the figures, labels, units and
legends here on the server and hand ECharts an option dict, which `templates/portal/_chart.html` embeds with
`json_script` beside a table of the same figures (readable without JavaScript and by the test client).

ECharts picks round value ticks itself (1, 2 or 5 × a power of ten), so the reference lines (a capacity, a
baseline) are drawn as series of their own: their values are then inside the axis' range, and the legend hides
and shows them like any other line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.utils.translation import gettext as _

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"]
ALLOCATED = "#b7cde6"  # pale: what was allocated, under what ran
RUNNING = "#067647"
TOTAL = "#1d2939"
LIMIT = "#b42318"  # a line under which something is wrong (suspect below)
OVER = "#6941c6"  # what ran beyond an allocation: a colour of its own, never a shade of healthy green
CHOSEN = "rgba(71, 84, 103, 0.12)"  # the chosen period's weeks, behind the lines
TEXT = "#344054"


@dataclass
class Chart:
    """One chart: the ECharts `option`, how its values read (`unit`: prefix, suffix, decimals), its height, a name
    for screen readers, and its figures as a table (`columns`, `rows` of cells: text, or (text, url))."""

    key: str
    label: str
    option: dict
    height: int
    columns: list[str]
    rows: list[list] = field(default_factory=list)
    unit: dict = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"chart-{self.key}"

    @property
    def payload(self) -> dict:
        return {"option": self.option, "unit": self.unit}


def unit(*, digits: int = 0, prefix: str = "", suffix: str = "") -> dict:
    """How charts.js writes a value in tooltips: `digits` decimals, the page's language's digit grouping."""
    return {"digits": digits, "prefix": prefix, "suffix": suffix}


LEGEND_WIDTH = 980  # px a legend has at 1280 px (the card less the toolbox)
LEGEND_ROW = 22  # px


def legend_rows(names: list[str]) -> int:
    """How many rows the legend takes (it wraps, never scrolls): entries are an icon and a gap (40 px) and their
    text (about 7 px a Latin letter, 12 px a Japanese one, at 12 px)."""
    rows, used = 1, 0
    for name in names:
        width = 40 + sum(7 if ord(char) < 0x2E80 else 12 for char in str(name))
        if used and used + width > LEGEND_WIDTH:
            rows, used = rows + 1, 0
        used += width
    return rows


def base_option(*, filename: str, legend: bool = True) -> dict:
    """Tooltips listing every series at the hovered point, a legend whose entries hide and show their series, a
    button saving the chart as an SVG (the SVG renderer's own image: vector, sharp at any size in a report), and room
    for the axes' labels."""
    option: dict = {
        "animation": False,
        "color": PALETTE,
        "textStyle": {"color": TEXT},
        "tooltip": {"trigger": "axis", "confine": True, "axisPointer": {"type": "shadow"}},
        "toolbox": {
            "right": 0,
            "top": 0,
            "feature": {"saveAsImage": {"title": _("Save as SVG"), "type": "svg", "name": filename}},
        },
        "grid": {"left": 8, "right": 24, "top": 36, "bottom": 28, "containLabel": True},
    }
    if legend:
        option["legend"] = {"top": 0, "left": 0, "right": 40, "type": "plain"}
    return option


def fit_legend(option: dict) -> int:
    """Room above the plot for the legend's rows (it wraps, never hides entries behind a scroll): moves the plot
    down and returns the height the rows add."""
    if "legend" not in option:
        return 0
    names = option["legend"].get("data") or [series["name"] for series in option["series"]]
    added = LEGEND_ROW * legend_rows(names)
    option["grid"]["top"] += added
    return added


def category_axis(labels: list[str], *, name: str = "", **extra) -> dict:
    """Days, weeks or sizes across the chart, named under it."""
    axis = {
        "type": "category",
        "data": labels,
        "name": name,
        "nameLocation": "middle",
        "nameGap": 28,
        "axisTick": {"alignWithLabel": True},
        **extra,
    }
    if extra.get("boundaryGap") is False:
        # The first and last points are on the plot's edges: their labels keep inside (centred, half was cut).
        axis["axisLabel"] = {"alignMinLabel": "left", "alignMaxLabel": "right"}
    return axis


def value_axis(name: str, *, across: bool = False, **extra) -> dict:
    """A value axis from 0 with its unit as its name: above it, or under it for an axis `across` the chart; a little
    room above the highest value, so a line at the top (a capacity, a baseline) keeps its label inside."""
    axis = {
        "type": "value",
        "name": name,
        "min": 0,
        "boundaryGap": [0, "5%"],
        "nameTextStyle": {"align": "left"},
        **extra,
    }
    if across:
        axis.update(nameLocation="middle", nameGap=28, nameTextStyle={})
    return axis


def beyond(name: str, *, base: list, over: list, color: str = OVER, **extra) -> list[dict]:
    """A bar series drawn over the end of another — what ran beyond an allocation, at the end of the bar of what
    ran — as ECharts draws a segment: stacked on a transparent base (`base`: where it starts), the base kept out of
    the tooltip and the legend (list the legend's entries in option["legend"]["data"])."""
    return [
        {
            "type": "bar",
            "name": "",  # no legend entry, no tooltip line: only where the segment starts
            "stack": "beyond",
            "data": base,
            "itemStyle": {"color": "transparent"},
            "silent": True,
            "emphasis": {"disabled": True},
            "tooltip": {"show": False},
            **extra,
        },
        {"type": "bar", "name": name, "stack": "beyond", "data": over, "color": color, **extra},
    ]


def reference_line(
    name: str,
    value: float,
    count: int,
    *,
    label: str,
    color: str,
    dashed: bool = True,
    position: str = "insideStartTop",
) -> dict:
    """A horizontal line at `value` across `count` categories, labelled where it is drawn (above its start by
    default; two lines close together put their labels on either side): a series, so the axis' range includes it,
    the tooltip gives it and the legend can hide it; the label is its mark line's (a line series without symbols
    shows no labels)."""
    style = {"color": color, "width": 1.5, "type": "dashed" if dashed else "solid"}
    return {
        "type": "line",
        "name": name,
        "data": [value] * count,
        "symbol": "none",
        "color": color,
        "lineStyle": style,
        "emphasis": {"disabled": True},
        "z": 4,
        "markLine": {
            "symbol": "none",
            "silent": True,
            "lineStyle": style,
            "label": {
                "formatter": label,
                "position": position,
                "color": color,
                "textBorderColor": "#fff",
                "textBorderWidth": 3,
            },
            "data": [{"yAxis": value}],
        },
    }
