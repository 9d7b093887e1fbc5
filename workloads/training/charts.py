"""The workload page's training charts (ECharts options, see portal.charts), each with the table of its figures:

- tokens trained over time, per run, against the plan, with the projection at the last 7 days' rate to the finish
  date and the allocation's end; restarts marked;
- the training loss, per run;
- MFU over time, per run: computed from the throughput, and the logged TFLOP/s as a share of the same peak, against
  the MFU the capacity request's estimate assumed.

Time runs across (a time axis: samples are irregular, and the projection reaches months ahead).
"""

from __future__ import annotations

import math
from datetime import datetime

from django.utils import timezone
from django.utils.formats import date_format
from django.utils.translation import gettext as _

from portal import charts
from workloads.training.figures import WorkloadProgress
from workloads.training.series import Sample

BILLION = 1e9
RESTART = "#b42318"
PROJECTION = "#667085"


def _when(at: datetime) -> str:
    return date_format(timezone.localtime(at), "Y-m-d H:i")


def _iso(at: datetime) -> str:
    return timezone.localtime(at).isoformat(timespec="seconds")


def _time_axis(name: str) -> dict:
    return {"type": "time", "name": name, "nameLocation": "middle", "nameGap": 28}


def _option(filename: str, y_name: str) -> dict:
    option = charts.base_option(filename=filename)
    option["tooltip"]["axisPointer"] = {"type": "line"}
    option["xAxis"] = _time_axis(_("time (program timezone)"))
    option["yAxis"] = charts.value_axis(y_name)
    option["series"] = []
    return option


def _line(name: str, data: list, **style) -> dict:
    return {"type": "line", "name": name, "data": data, "showSymbol": len(data) < 40, "connectNulls": False, **style}


def tokens_chart(progress: WorkloadProgress, samples: dict[int, list[Sample]], *, now: datetime) -> charts.Chart | None:
    if not any(samples.values()):
        return None
    option = _option("training-tokens", _("tokens trained (billions)"))
    rows = []
    restarts = []
    for figures in progress.runs:
        points = samples.get(figures.run.pk) or []
        data = [[_iso(s.at), round(s.tokens / BILLION, 3) if s.tokens is not None else None] for s in points]
        option["series"].append(_line(figures.run.name, data))
        for sample in points:
            tokens = "—" if sample.tokens is None else f"{sample.tokens / BILLION:,.3f}"
            rows.append([(_when(sample.at), ""), figures.run.name, f"{sample.iteration:,}", tokens, sample.restarts])
            if sample.restarts and sample.tokens is not None:
                restarts.append([_iso(sample.at), round(sample.tokens / BILLION, 3)])
    if restarts:
        option["series"].append(
            {"type": "scatter", "name": _("restart"), "data": restarts, "symbol": "triangle", "symbolSize": 10,
             "color": RESTART}
        )  # fmt: skip
    plan, finish = progress.planned_tokens, progress.finish
    last = max((s.at for points in samples.values() for s in points), default=now)
    first = min((s.at for points in samples.values() for s in points), default=now)
    if plan:
        end = max(filter(None, [last, finish and finish.on, finish and finish.allocation_ends]))
        label = _("plan %(tokens)s B tokens") % {"tokens": f"{plan / BILLION:,.0f}"}
        option["series"].append(
            _line(label, [[_iso(first), plan / BILLION], [_iso(end), plan / BILLION]], color=charts.TOTAL,
                  lineStyle={"type": "dashed", "width": 1.5}, showSymbol=False)
        )  # fmt: skip
        if finish and finish.on and not finish.done:
            option["series"].append(
                _line(_("projection at the last 7 days' rate"),
                      [[_iso(now), progress.tokens / BILLION], [_iso(finish.on), plan / BILLION]],
                      color=PROJECTION, lineStyle={"type": "dotted", "width": 2}, showSymbol=False)
            )  # fmt: skip
    if finish and finish.allocation_ends:
        label = _("allocation ends %(day)s") % {"day": date_format(timezone.localtime(finish.allocation_ends), "Y-m-d")}
        option["series"][0]["markLine"] = {
            "symbol": "none",
            "silent": True,
            "lineStyle": {"color": charts.LIMIT, "type": "dashed"},
            "label": {"formatter": label, "color": charts.LIMIT, "position": "insideEndTop"},
            "data": [{"xAxis": _iso(finish.allocation_ends)}],
        }
    return charts.Chart(
        key="training-tokens",
        label=_("Tokens trained over time, against the plan, with the projection to the finish date"),
        option=option,
        height=340 + charts.fit_legend(option),
        columns=[_("time"), _("run"), _("iteration"), _("tokens (billions)"), _("restarts")],
        rows=rows,
        unit=charts.unit(digits=2, suffix=" B"),
    )


def loss_chart(progress: WorkloadProgress, samples: dict[int, list[Sample]]) -> charts.Chart | None:
    if not any(s.loss is not None for points in samples.values() for s in points):
        return None
    option = _option("training-loss", _("training loss"))
    losses = [s.loss for points in samples.values() for s in points if s.loss is not None]
    option["yAxis"]["min"] = math.floor(min(losses) * 2) / 2  # the loss falls slowly: no axis from 0, a round start
    rows = []
    for figures in progress.runs:
        points = samples.get(figures.run.pk) or []
        option["series"].append(_line(figures.run.name, [[_iso(s.at), s.loss] for s in points]))
        rows += [
            [(_when(s.at), ""), figures.run.name, f"{s.iteration:,}", "—" if s.loss is None else f"{s.loss:.4f}"]
            for s in points
        ]
    return charts.Chart(
        key="training-loss",
        label=_("Training loss over time"),
        option=option,
        height=300 + charts.fit_legend(option),
        columns=[_("time"), _("run"), _("iteration"), _("loss")],
        rows=rows,
        unit=charts.unit(digits=3),
    )


def mfu_chart(
    progress: WorkloadProgress, samples: dict[int, list[Sample]], *, expected: float | None
) -> charts.Chart | None:
    if not any(s.mfu is not None or s.logged_tflops is not None for points in samples.values() for s in points):
        return None
    option = _option("training-mfu", _("model FLOPs utilization (%)"))
    rows = []
    first = min(s.at for points in samples.values() for s in points)
    last = max(s.at for points in samples.values() for s in points)
    for figures in progress.runs:
        points = samples.get(figures.run.pk) or []
        peak = figures.peak_tflops
        computed = [[_iso(s.at), _percent(s.mfu)] for s in points]
        option["series"].append(_line(_("%(run)s: computed") % {"run": figures.run.name}, computed))
        logged = [[_iso(s.at), _percent(s.logged_tflops / peak if peak and s.logged_tflops else None)] for s in points]
        if any(value is not None for _at, value in logged):
            option["series"].append(
                _line(_("%(run)s: logged TFLOP/s ÷ peak") % {"run": figures.run.name}, logged,
                      lineStyle={"type": "dashed"})
            )  # fmt: skip
        for sample, (_at, value), (_at2, logged_value) in zip(points, computed, logged, strict=True):
            rows.append(
                [(_when(sample.at), ""), figures.run.name, _cell(value), _cell(logged_value),
                 "—" if sample.logged_tflops is None else f"{sample.logged_tflops:,.1f}"]
            )  # fmt: skip
    if expected:
        label = _("estimate %(mfu)s %%") % {"mfu": f"{expected * 100:.0f}"}
        option["series"].append(
            _line(label, [[_iso(first), round(expected * 100, 1)], [_iso(last), round(expected * 100, 1)]],
                  color=charts.TOTAL, lineStyle={"type": "dashed", "width": 1.5}, showSymbol=False)
        )  # fmt: skip
    return charts.Chart(
        key="training-mfu",
        label=_("Model FLOPs utilization over time: computed from the throughput, and as logged"),
        option=option,
        height=300 + charts.fit_legend(option),
        columns=[_("time"), _("run"), _("MFU computed (%)"), _("MFU logged (%)"), _("logged TFLOP/s per accelerator")],
        rows=rows,
        unit=charts.unit(digits=1, suffix=" %"),
    )


def _percent(value: float | None) -> float | None:
    return None if value is None else round(value * 100, 1)


def _cell(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"
