"""The bandwidth-by-message-size chart of an nccl-tests run: bus bandwidth (GB/s) up, message size on a log₂ scale
across, the run's out-of-place and in-place lines against the baseline and the line under which a run is suspect.
Server-rendered SVG like every chart of the portal (portal.charts)."""

from __future__ import annotations

import math

from django.utils.translation import gettext as _

from portal.charts import Frame, ValueScale, nice_ceiling
from workloads.validation.models import NcclValidation

FRAME = Frame(width=760, height=300, left=56, right=32, top=16, bottom=48)  # room for the last size label
UNITS = ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"), (1, "B"))


def size_label(size: int) -> str:
    for factor, unit in UNITS:
        if size >= factor and size % factor == 0:
            return f"{size // factor} {unit}"
    return f"{size} B"


def bandwidth_chart(run: NcclValidation) -> dict | None:
    rows = [row for row in run.rows if row[0] > 0]  # log scale: the 0-byte row has no place on it
    if not rows:
        return None
    low, high = math.log2(rows[0][0]), math.log2(rows[-1][0])
    span = max(high - low, 1)
    top = max([run.baseline_busbw_gbps or 0, *(max(r[1], r[2]) for r in rows)]) * 1.1 or 1
    values = ValueScale(FRAME, nice_ceiling(top, count=5))  # the axis ends on a round tick

    def x(size: int) -> float:
        return round(FRAME.left + FRAME.plot_w * (math.log2(size) - low) / span, 2)

    def line(column: int) -> str:
        return " ".join(f"{x(row[0])},{values.y(row[column])}" for row in rows)

    step = max(1, math.ceil(span / 10))  # at most about ten size labels
    ticks = [{"x": x(2**p), "label": size_label(2**p)} for p in range(math.ceil(low), math.floor(high) + 1, step)]
    chart = {
        "frame": FRAME.as_dict(),
        "out_of_place": line(1),
        "in_place": line(2),
        "size_ticks": ticks,
        "value_ticks": values.ticks(count=5),
        # One hover target per size with both values: the in-place line often lies on the out-of-place one.
        "points": [
            {
                "x": x(r[0]),
                "y": values.y(max(r[1], r[2])),
                "title": _("%(size)s: %(out)s GB/s out-of-place, %(in)s GB/s in-place")
                % {"size": size_label(r[0]), "out": f"{r[1]:g}", "in": f"{r[2]:g}"},
            }
            for r in rows
        ],
    }
    if run.baseline_busbw_gbps:
        suspect = run.baseline_busbw_gbps * float(run.min_fraction or 0)
        chart["baseline_y"] = values.y(run.baseline_busbw_gbps)
        chart["suspect_y"] = values.y(suspect)
        # The lines are labelled where they are drawn (the baseline had no label; the legend alone named it).
        chart["baseline_label"] = _("baseline %(gbps)s GB/s") % {"gbps": f"{run.baseline_busbw_gbps:,.0f}"}
        chart["suspect_label"] = _("suspect below %(gbps)s GB/s") % {"gbps": f"{suspect:,.0f}"}
    return chart
