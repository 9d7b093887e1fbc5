"""Every training-progress figure, defined once: the workload page, the API, the CSV and the program's pages call
these functions, never their own arithmetic.

- **Tokens trained**: the tokens the log prints, else consumed samples × sequence length, else iterations × global
  batch × sequence length; a run's tokens are those at its last iteration (work lost to a restart is not counted).
  A workload's are the sum of its runs'; its plan is its target tokens (a run may carry its own plan).
- **Throughput**: tokens per second while training (first-time iterations' tokens ÷ their step time), for the job
  and per accelerator.
- **MFU** (model FLOPs utilization) = 6 · N · tokens/s ÷ (accelerators × peak), N the parameters a token uses (the
  active ones of a mixture of experts), the peak the accelerator's dense BF16 throughput from the instance-type
  catalog: NVIDIA H100 SXM 989 TFLOPS (H100 datasheet, dense, without sparsity), H200 the same; AWS Trainium1
  190 TFLOPS per chip (trn1.32xlarge: 3,040 TFLOPS for 16 chips, AWS's Trn1 page). The logged TFLOP/s per
  accelerator is shown beside the computed one; a logged figure above the peak is implausible and never averaged.
- **Finish date**: the tokens still to train at the rate of the last 7 days (first-time tokens ÷ 7 days of wall
  time, idle days included: that is the rate the calendar sees), against the allocation's last day. At risk when
  after it, with the instance-days more that it would take at that rate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Sum
from django.utils import timezone

from portal.periods import day_start
from tenants.capacity.estimate import DEFAULT_MFU, FLOPS_PER_PARAMETER_TOKEN
from tenants.models import InstanceType
from workloads.training.models import ProgressHour, TrainingRun

RECENT = timedelta(days=7)
HORIZON = timedelta(days=100 * 365)


def instance_type_of(run: TrainingRun) -> InstanceType | None:
    """The run's instance type: its own, else its workload's allocation's."""
    if run.instance_type_id:
        return run.instance_type
    allocation = run.workload.allocation
    return allocation.pool.instance_type if allocation else None


def peak_tflops_of(run: TrainingRun) -> float | None:
    """Dense BF16 peak TFLOP/s of one accelerator of the run (a GPU, a Trainium chip); None when unknown."""
    kind = instance_type_of(run)
    return float(kind.peak_bf16_tflops) if kind and kind.peak_bf16_tflops else None


def accelerators_of(run: TrainingRun, *, logged_world_size: int | None = None) -> int | None:
    """GPUs or Trainium chips the run trains on: its own count, else its ranks (the log's world size, else the
    workload's TP × PP × DP) over the ranks an accelerator runs (2 NeuronCores a Trainium1 chip, 1 a GPU)."""
    if run.accelerators:
        return run.accelerators
    ranks = logged_world_size or run.workload.world_size
    kind = instance_type_of(run)
    if not ranks or kind is None:
        return ranks or None
    per_accelerator = max(kind.ranks_per_instance // max(kind.accelerators_per_instance, 1), 1)
    return max(ranks // per_accelerator, 1)


def parameters_of(run: TrainingRun) -> int:
    workload = run.workload
    return workload.active_parameter_count or workload.parameter_count


def throughput(tokens: int | None, seconds: float | None) -> float | None:
    """Tokens per second of training: tokens whose step time is known ÷ that time (a run's, an hour's, a bucket's)."""
    return (tokens or 0) / seconds if seconds else None


def mfu(*, parameters: int, tokens_per_second: float, accelerators: int, peak_tflops: float) -> float:
    """Model FLOPs utilization, 0–1 (above 1 cannot be: the caller flags it)."""
    return FLOPS_PER_PARAMETER_TOKEN * parameters * tokens_per_second / (accelerators * peak_tflops * 1e12)


def model_tflops(*, parameters: int, tokens_per_second: float, accelerators: int) -> float:
    """TFLOP/s per accelerator the model's arithmetic needs at this throughput (6 · N · tokens/s ÷ accelerators)."""
    return FLOPS_PER_PARAMETER_TOKEN * parameters * tokens_per_second / accelerators / 1e12


@dataclass
class RunFigures:
    run: TrainingRun
    planned_tokens: int | None
    tokens: int
    accelerators: int | None
    peak_tflops: float | None
    tokens_per_second: float | None  # while training, over the run
    recent_tokens_per_second: float | None  # tokens gained in the last 7 days ÷ 7 days of wall time
    mfu: float | None
    computed_tflops: float | None  # per accelerator, from tokens/s
    logged_tflops: float | None  # per accelerator, plausible logged figures averaged
    productive_hours: float
    lost_hours: float
    skipped_hours: float
    finish: Finish | None = None

    @property
    def fraction(self) -> float | None:
        return self.tokens / self.planned_tokens if self.planned_tokens else None

    def mfu_at(self, tokens_per_second: float | None) -> float | None:
        """The run's MFU at a throughput (an hour's, a sample's); None when a figure it needs is unknown."""
        if not tokens_per_second or not self.accelerators or not self.peak_tflops:
            return None
        return mfu(
            parameters=parameters_of(self.run), tokens_per_second=tokens_per_second,
            accelerators=self.accelerators, peak_tflops=self.peak_tflops,
        )  # fmt: skip


@dataclass
class Finish:
    """When the planned tokens are reached at the recent rate, against the allocation's last day."""

    remaining_tokens: int
    on: datetime | None  # None: not within a century at this rate (or no progress in the last 7 days)
    allocation_ends: datetime | None  # the end of the allocation's last day, None without an allocation
    extra_instance_days: float | None = None  # at risk: instance-days beyond the allocation at this rate

    @property
    def done(self) -> bool:
        return self.remaining_tokens <= 0

    @property
    def at_risk(self) -> bool:
        if self.done or self.allocation_ends is None:
            return False
        return self.on is None or self.on > self.allocation_ends


@dataclass
class WorkloadProgress:
    runs: list[RunFigures] = field(default_factory=list)
    planned_tokens: int | None = None
    tokens: int = 0
    finish: Finish | None = None

    @property
    def fraction(self) -> float | None:
        return self.tokens / self.planned_tokens if self.planned_tokens else None

    @property
    def current(self) -> RunFigures | None:
        """The run trained last."""
        dated = [figures for figures in self.runs if figures.run.last_point_at]
        return max(dated, key=lambda figures: figures.run.last_point_at) if dated else None


def run_figures(runs: list[TrainingRun], *, now: datetime | None = None) -> dict[int, RunFigures]:
    """Each run's figures, from its running state and its hourly sums (two grouped reads for every run at once)."""
    now = now or timezone.now()
    ids = [run.pk for run in runs]
    totals = {
        row["run"]: row
        for row in ProgressHour.objects.filter(run__in=ids)
        .values("run")
        .annotate(
            productive=Sum("productive_seconds"),
            lost=Sum("lost_seconds"),
            skipped=Sum("skipped_seconds"),
            timed_tokens=Sum("timed_tokens"),
            tflops_sum=Sum("tflops_logged_sum"),
            tflops_count=Sum("tflops_logged_count"),
        )
    }
    rates = recent_rates(runs, now=now)
    figures = {}
    for run in runs:
        sums = totals.get(run.pk, {})
        accelerators, peak, parameters = accelerators_of(run), peak_tflops_of(run), parameters_of(run)
        productive = sums.get("productive") or 0.0
        rate = throughput(sums.get("timed_tokens"), productive)
        computed = None
        if rate and accelerators and parameters:
            computed = model_tflops(parameters=parameters, tokens_per_second=rate, accelerators=accelerators)
        count = sums.get("tflops_count") or 0
        figures[run.pk] = item = RunFigures(
            run=run,
            planned_tokens=run.planned_tokens or run.workload.target_tokens,
            tokens=run.tokens,
            accelerators=accelerators,
            peak_tflops=peak,
            tokens_per_second=rate,
            recent_tokens_per_second=rates.get(run.pk),
            mfu=None,
            computed_tflops=computed,
            logged_tflops=(sums["tflops_sum"] / count) if count else None,
            productive_hours=productive / 3600,
            lost_hours=(sums.get("lost") or 0) / 3600,
            skipped_hours=(sums.get("skipped") or 0) / 3600,
        )
        item.mfu = item.mfu_at(rate)
    return figures


def recent_rates(runs: list[TrainingRun], *, now: datetime) -> dict[int, float | None]:
    """Each run's tokens gained in the last 7 days ÷ 7 days of wall time (or its age, when younger): one read."""
    gained = dict(
        ProgressHour.objects.filter(run__in=[run.pk for run in runs], hour__gte=now - RECENT, hour__lt=now)
        .values("run")
        .annotate(gained=Sum("new_tokens"))
        .values_list("run", "gained")
    )
    rates = {}
    for run in runs:
        span = min(RECENT, now - run.first_point_at) if run.first_point_at else None
        seconds = span.total_seconds() if span else 0
        rates[run.pk] = (gained.get(run.pk) or 0) / seconds if seconds > 0 else None
    return rates


def workload_finish(workload, *, tokens: int, rate: float | None, now: datetime) -> Finish | None:
    """When the workload's planned tokens are reached at `rate` (its runs' recent rates summed); None without a
    plan."""
    if not workload.target_tokens:
        return None
    allocation = workload.allocation
    return finish(
        remaining=workload.target_tokens - tokens,
        rate=rate,
        now=now,
        ends=allocation_end(workload),
        instances=allocation.instance_count if allocation else None,
    )


def allocation_end(workload) -> datetime | None:
    allocation = workload.allocation
    return day_start(allocation.ends_on + timedelta(days=1)) if allocation else None


def finish(
    *, remaining: int, rate: float | None, now: datetime, ends: datetime | None, instances: int | None
) -> Finish:
    if remaining <= 0:
        return Finish(remaining_tokens=remaining, on=now, allocation_ends=ends)
    seconds = remaining / rate if rate else None
    # Beyond the horizon is "not at this rate" (a date centuries away says nothing, and past year 9999 none exists).
    on = now + timedelta(seconds=seconds) if seconds is not None and seconds < HORIZON.total_seconds() else None
    result = Finish(remaining_tokens=remaining, on=on, allocation_ends=ends)
    if result.at_risk and on is not None and instances:
        result.extra_instance_days = (on - ends).total_seconds() / 86_400 * instances
    return result


def workload_progress(workload, *, now: datetime | None = None) -> WorkloadProgress:
    """A workload's runs with their figures, its tokens against its plan and its finish date."""
    now = now or timezone.now()
    runs = list(
        TrainingRun.objects.for_org(workload.organization)
        .filter(workload=workload)
        .select_related("instance_type")
        .order_by("created_at", "pk")
    )
    for run in runs:
        run.workload = workload  # one workload object, its allocation read once
    figures = run_figures(runs, now=now)
    progress = WorkloadProgress(runs=[figures[run.pk] for run in runs], planned_tokens=workload.target_tokens)
    progress.tokens = sum(item.tokens for item in progress.runs)
    rate = sum(item.recent_tokens_per_second or 0 for item in progress.runs)
    progress.finish = workload_finish(workload, tokens=progress.tokens, rate=rate, now=now)
    return progress


def expected_mfu(workload) -> float:
    """The MFU the workload's capacity was estimated at: its allocation's request's, else the estimate's default."""
    allocation = workload.allocation
    request = getattr(allocation, "request", None) if allocation else None
    value = request.expected_mfu if request is not None and request.expected_mfu else DEFAULT_MFU
    return float(value)
