"""A run's progress over time, downsampled: what the charts, the API's series and the CSV read.

A run of up to a thousand iterations is read point by point (thinned to `limit` samples); a longer one from its
hourly sums (ProgressHour: about 4,400 rows for six months), merged into at most `limit` buckets of consecutive
hours. Either way one bounded read, whatever the run's length: a 1.5-million-iteration run is never read whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from django.db.models import F, Max, Sum

from workloads.training.figures import RunFigures, throughput
from workloads.training.ingest import hour_number
from workloads.training.models import ProgressHour, ProgressPoint

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
    samples: list[Sample] = []
    again = False
    for row in rows[:POINTS_READ_WHOLE].values(
        "at", "iteration", "tokens", "loss", "tokens_per_second", "tflops_logged", "implausible", "computed_again"
    ):
        rate = None if row["implausible"] else row["tokens_per_second"]
        logged = row["tflops_logged"]
        if logged is not None and figures.peak_tflops and logged > figures.peak_tflops:
            logged = None
        # A restart is where the iterations computed again begin (their points carry the time they ran again).
        restart = row["computed_again"] and not again
        again = row["computed_again"]
        samples.append(
            Sample(
                at=row["at"],
                iteration=row["iteration"],
                tokens=row["tokens"],
                loss=row["loss"],
                tokens_per_second=rate,
                mfu=figures.mfu_at(rate),
                logged_tflops=logged,
                restarts=int(restart),
            )
        )
    return samples


def _thin(samples: list[Sample], limit: int) -> list[Sample]:
    if len(samples) <= limit:
        return samples
    step = len(samples) / limit
    return [samples[int(index * step)] for index in range(limit - 1)] + [samples[-1]]


def _from_hours(figures: RunFigures, limit: int) -> list[Sample]:
    """Consecutive hours summed per bucket in the database (at most `limit` rows read): a bucket's tokens are the most
    it reached (a restart inside it shows in the next), the last sample's the run's own."""
    run = figures.run
    first, last = hour_number(run.first_point_at), hour_number(run.last_point_at)
    size = max(1, -(-(last - first + 1) // limit))  # hours per bucket, rounded up
    buckets = (
        ProgressHour.objects.filter(run=run)
        .annotate(bucket=(F("hour_number") - first) / size)
        .values("bucket")
        .annotate(
            last_hour=Max("hour_number"),
            last_iteration=Max("last_iteration"),
            tokens=Max("tokens_end"),
            loss_sum=Sum("loss_sum"),
            loss_count=Sum("loss_count"),
            timed_tokens=Sum("timed_tokens"),
            seconds=Sum("productive_seconds"),
            tflops_sum=Sum("tflops_logged_sum"),
            tflops_count=Sum("tflops_logged_count"),
            restarts=Sum("restarts"),
        )
        .order_by("bucket")
    )
    samples = []
    for row in buckets:
        rate = throughput(row["timed_tokens"], row["seconds"])
        samples.append(
            Sample(
                at=datetime.fromtimestamp(row["last_hour"] * 3600, UTC),
                iteration=row["last_iteration"],
                tokens=row["tokens"],
                loss=row["loss_sum"] / row["loss_count"] if row["loss_count"] else None,
                tokens_per_second=rate,
                mfu=figures.mfu_at(rate),
                logged_tflops=row["tflops_sum"] / row["tflops_count"] if row["tflops_count"] else None,
                restarts=row["restarts"],
            )
        )
    if samples:
        samples[-1].tokens, samples[-1].iteration = run.tokens, run.last_iteration
    return samples
