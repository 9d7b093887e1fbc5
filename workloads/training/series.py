"""A run's progress over time, downsampled: what the charts, the API's series and the CSV read.

A run of up to a thousand iterations is read point by point (thinned to `limit` samples); a longer one from its
hourly sums (ProgressHour: about 4,400 rows for six months), merged into at most `limit` buckets of consecutive
hours. Either way one bounded read, whatever the run's length: a 1.5-million-iteration run is never read whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from workloads.training.figures import RunFigures
from workloads.training.models import ProgressHour, ProgressPoint, RunStart

POINTS_READ_WHOLE = 1_000
DEFAULT_LIMIT = 200
MAX_LIMIT = 1_000


@dataclass
class Sample:
    at: datetime
    iteration: int
    tokens: int | None
    loss: float | None
    tokens_per_second: float | None
    mfu: float | None  # from the tokens per second (workloads.training.figures.mfu)
    logged_tflops: float | None  # per accelerator, plausible figures only
    restarts: int


def run_series(figures: RunFigures, *, limit: int = DEFAULT_LIMIT) -> list[Sample]:
    run = figures.run
    if run.points + run.lost_iterations <= POINTS_READ_WHOLE:
        samples = _from_points(figures)
        return _thin(samples, limit)
    return _from_hours(figures, limit)


def _from_points(figures: RunFigures) -> list[Sample]:
    rows = ProgressPoint.objects.filter(run=figures.run).order_by("at", "iteration")
    restarts = set(figures.run.starts.filter(kind=RunStart.Kind.RESTART).values_list("at", flat=True))
    samples = []
    for row in rows[:POINTS_READ_WHOLE].values(
        "at", "iteration", "tokens", "loss", "tokens_per_second", "tflops_logged", "implausible"
    ):
        rate = None if row["implausible"] else row["tokens_per_second"]
        logged = row["tflops_logged"]
        if logged is not None and figures.peak_tflops and logged > figures.peak_tflops:
            logged = None
        samples.append(
            Sample(
                at=row["at"],
                iteration=row["iteration"],
                tokens=row["tokens"],
                loss=row["loss"],
                tokens_per_second=rate,
                mfu=figures.mfu_at(rate),
                logged_tflops=logged,
                restarts=1 if row["at"] in restarts else 0,
            )
        )
    return samples


def _thin(samples: list[Sample], limit: int) -> list[Sample]:
    if len(samples) <= limit:
        return samples
    step = len(samples) / limit
    return [samples[int(index * step)] for index in range(limit - 1)] + [samples[-1]]


def _from_hours(figures: RunFigures, limit: int) -> list[Sample]:
    hours = list(
        ProgressHour.objects.filter(run=figures.run)
        .order_by("hour")
        .values_list(
            "hour", "last_iteration", "tokens_end", "loss_sum", "loss_count", "new_tokens", "productive_seconds",
            "tflops_logged_sum", "tflops_logged_count", "restarts",
        )
    )  # fmt: skip
    size = max(1, -(-len(hours) // limit))  # hours per bucket, rounded up
    samples = []
    for start in range(0, len(hours), size):
        bucket = hours[start : start + size]
        last = bucket[-1]
        loss_sum, loss_count = sum(h[3] for h in bucket), sum(h[4] for h in bucket)
        tokens, seconds = sum(h[5] for h in bucket), sum(h[6] for h in bucket)
        tflops_sum, tflops_count = sum(h[7] for h in bucket), sum(h[8] for h in bucket)
        rate = tokens / seconds if seconds else None
        samples.append(
            Sample(
                at=last[0],
                iteration=last[1],
                tokens=next((h[2] for h in reversed(bucket) if h[2] is not None), None),
                loss=loss_sum / loss_count if loss_count else None,
                tokens_per_second=rate,
                mfu=figures.mfu_at(rate),
                logged_tflops=tflops_sum / tflops_count if tflops_count else None,
                restarts=sum(h[9] for h in bucket),
            )
        )
    return samples
