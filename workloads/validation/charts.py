"""The bandwidth-by-message-size chart of an nccl-tests run: bus bandwidth (GB/s) up, message size across (one
column per size: nccl-tests doubles the size from row to row, so the columns are a log₂ scale), the run's
out-of-place and in-place lines against the baseline and the line under which a run is suspect, each labelled
where it is drawn (an ECharts option, see portal.charts)."""

from __future__ import annotations

from django.utils.translation import gettext as _

from portal import charts
from workloads.validation.models import NcclValidation

UNITS = ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"), (1, "B"))
OUT_OF_PLACE = "#8fb3dc"  # wide and pale, under the in-place line: equal values never hide a line


def size_label(size: int) -> str:
    for factor, unit in UNITS:
        if size >= factor and size % factor == 0:
            return f"{size // factor} {unit}"
    return f"{size} B"


def bandwidth_chart(run: NcclValidation) -> charts.Chart | None:
    rows = [row for row in run.rows if row[0] > 0]  # a log scale: the 0-byte row has no place on it
    if not rows:
        return None
    sizes = [size_label(row[0]) for row in rows]
    option = charts.base_option(filename=f"nccl-{run.collective or 'run'}-{run.pk}")
    option["grid"]["right"] = 32
    option["xAxis"] = charts.category_axis(sizes, name=_("message size"), boundaryGap=False)
    option["yAxis"] = charts.value_axis(_("bus bandwidth (GB/s)"))
    option["tooltip"]["axisPointer"] = {"type": "line"}
    option["series"] = [
        {
            "type": "line",
            "name": _("out-of-place"),
            "data": [row[1] for row in rows],
            "symbol": "none",
            "color": OUT_OF_PLACE,
            "lineStyle": {"width": 6, "color": OUT_OF_PLACE},
            "z": 2,
        },
        {
            "type": "line",
            "name": _("in-place"),
            "data": [row[2] for row in rows],
            "symbolSize": 4,
            "color": charts.RUNNING,
            "lineStyle": {"width": 1.5, "type": "dashed"},
            "z": 3,
        },
    ]
    table = [[(size, ""), f"{row[1]:g}", f"{row[2]:g}"] for size, row in zip(sizes, rows, strict=True)]
    columns = [_("message size"), _("out-of-place (GB/s)"), _("in-place (GB/s)")]
    if run.baseline_busbw_gbps:
        suspect = run.baseline_busbw_gbps * float(run.min_fraction or 0)
        baseline_label = _("baseline %(gbps)s GB/s") % {"gbps": f"{run.baseline_busbw_gbps:,.0f}"}
        suspect_label = _("suspect below %(gbps)s GB/s") % {"gbps": f"{suspect:,.0f}"}
        option["series"] += [
            charts.reference_line(
                baseline_label, run.baseline_busbw_gbps, len(rows), label=baseline_label, color=charts.TOTAL,
                dashed=False,
            ),
            # The suspect line's label goes under it: above, it would print over the baseline's.
            charts.reference_line(
                suspect_label, round(suspect, 2), len(rows), label=suspect_label, color=charts.LIMIT,
                position="insideStartBottom",
            ),
        ]  # fmt: skip
        columns.append(_("baseline (GB/s)"))
        for line in table:
            line.append(f"{run.baseline_busbw_gbps:g}")
    return charts.Chart(
        key="nccl-chart",
        label=_("Bus bandwidth by message size, against the baseline"),
        option=option,
        height=340 + charts.fit_legend(option),
        columns=columns,
        rows=table,
        unit=charts.unit(digits=2, suffix=" GB/s"),
    )
