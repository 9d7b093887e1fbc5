"""Training across organizations, for the program's pages (the landing page, the weekly review, an organization's
page, the digest): each organization's MFU and goodput in a week, the workloads whose plan the recent rate will
not reach before their allocation ends, and an organization's workloads with their progress. Each reads in a bounded
number of queries whatever the number of runs.

An organization's MFU in a week is the model FLOPs its runs computed over the peak FLOPs of their accelerators while
training (Σ 6 · N · tokens ÷ Σ accelerators × peak × productive seconds): runs weighted by the compute they held.
Its goodput is workloads.training.goodput's, over the workloads that report progress: an organization that reports
none has no figure (—), not zero.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from django.db.models import Sum
from django.utils import timezone

from portal.periods import day_start, this_week
from tenants.capacity.estimate import FLOPS_PER_PARAMETER_TOKEN
from workloads.records.models import Workload
from workloads.training.figures import (
    Finish,
    accelerators_of,
    parameters_of,
    peak_tflops_of,
    recent_rates,
    run_figures,
    workload_finish,
)
from workloads.training.goodput import Goodput, organization_goodput, week_goodput
from workloads.training.models import ProgressHour, TrainingRun

LISTED = 6


@dataclass
class OrgTraining:
    mfu: float | None = None
    goodput: Goodput = field(default_factory=Goodput)
    reporting: bool = False  # some workload of the organization reports progress

    @property
    def goodput_ratio(self) -> float | None:
        return self.goodput.goodput if self.reporting else None


def _runs(runs) -> list[TrainingRun]:
    return list(runs.select_related("instance_type", "workload__allocation__pool__instance_type"))


def organizations_week(organization_ids, *, week: date, now: datetime | None = None) -> dict[int, OrgTraining]:
    """MFU and goodput per organization in the ISO week starting `week`, for these organizations."""
    now = now or timezone.now()
    runs = _runs(TrainingRun.objects.filter(organization_id__in=list(organization_ids)))
    result: dict[int, OrgTraining] = defaultdict(OrgTraining)
    if not runs:
        return result
    start, end = day_start(week), day_start(week + timedelta(days=7))
    sums = {
        row["run"]: row
        for row in ProgressHour.objects.filter(run__in=[r.pk for r in runs], hour__gte=start, hour__lt=end)
        .values("run")
        .annotate(tokens=Sum("timed_tokens"), seconds=Sum("productive_seconds"))
    }
    flops, capacity = defaultdict(float), defaultdict(float)
    for run in runs:
        row = sums.get(run.pk)
        accelerators, peak = accelerators_of(run), peak_tflops_of(run)
        if not row or not row["seconds"] or not accelerators or not peak:
            continue
        flops[run.organization_id] += FLOPS_PER_PARAMETER_TOKEN * parameters_of(run) * row["tokens"]
        capacity[run.organization_id] += accelerators * peak * 1e12 * row["seconds"]
    workloads = {run.workload_id: run.workload for run in runs}
    goodputs = week_goodput(workloads.values(), week=week, now=now)
    by_org = defaultdict(list)
    for workload_id, figures in goodputs.items():
        by_org[workloads[workload_id].organization_id].append(figures)
    for organization_id, figures in by_org.items():
        item = result[organization_id]
        item.reporting = True
        item.goodput = organization_goodput(figures)
        if capacity[organization_id]:
            item.mfu = flops[organization_id] / capacity[organization_id]
    return result


@dataclass
class AtRisk:
    workload: Workload
    tokens: int
    finish: Finish

    @property
    def fraction(self) -> float | None:
        return self.tokens / self.workload.target_tokens if self.workload.target_tokens else None


def training_at_risk(runs, *, now: datetime | None = None) -> list[AtRisk]:
    """The workloads of these runs (a tenant-scoped TrainingRun queryset) whose planned tokens the last 7 days' rate
    reaches only after their allocation ends, or never; the furthest behind first. Two reads."""
    now = now or timezone.now()
    runs = _runs(runs.filter(workload__target_tokens__isnull=False, workload__allocation__isnull=False).select_related(
        "workload__organization"
    ))  # fmt: skip
    rates = recent_rates(runs, now=now)
    tokens, rate, workloads = defaultdict(int), defaultdict(float), {}
    for run in runs:
        workloads[run.workload_id] = run.workload
        tokens[run.workload_id] += run.tokens
        rate[run.workload_id] += rates.get(run.pk) or 0
    found = []
    for workload_id, workload in workloads.items():
        if workload.status in (Workload.Status.COMPLETED, Workload.Status.ABANDONED):
            continue
        finish = workload_finish(workload, tokens=tokens[workload_id], rate=rate[workload_id], now=now)
        if finish is not None and finish.at_risk:
            found.append(AtRisk(workload=workload, tokens=tokens[workload_id], finish=finish))
    return sorted(found, key=_behind)


def _behind(item: AtRisk) -> tuple:
    """Never at this rate first, then the longest past the allocation's end."""
    finish = item.finish
    if finish.on is None:
        return (0, 0.0)
    return (1, -(finish.on - finish.allocation_ends).total_seconds())


@dataclass
class WorkloadTraining:
    """One workload's training as an organization's page lists it."""

    workload: Workload
    tokens: int
    finish: Finish | None
    mfu: float | None  # its run trained last
    goodput: Goodput

    @property
    def fraction(self) -> float | None:
        return self.tokens / self.workload.target_tokens if self.workload.target_tokens else None


def organization_training(organization, *, now: datetime | None = None) -> list[WorkloadTraining]:
    """Each workload of the organization that reports progress: tokens against plan, finish date, MFU of its latest
    run, goodput this week. A fixed number of reads, whatever the number of workloads and runs."""
    now = now or timezone.now()
    runs = _runs(TrainingRun.objects.for_org(organization).order_by("workload__name", "created_at"))
    figures = run_figures(runs, now=now)
    goodputs = week_goodput({run.workload_id: run.workload for run in runs}.values(), week=this_week(), now=now)
    by_workload: dict[int, list] = defaultdict(list)
    for run in runs:
        by_workload[run.workload_id].append(figures[run.pk])
    rows = []
    for items in by_workload.values():
        workload = items[0].run.workload
        tokens = sum(item.tokens for item in items)
        rate = sum(item.recent_tokens_per_second or 0 for item in items)
        latest = max(items, key=lambda item: item.run.last_point_at or item.run.created_at)
        rows.append(
            WorkloadTraining(
                workload=workload,
                tokens=tokens,
                finish=workload_finish(workload, tokens=tokens, rate=rate, now=now),
                mfu=latest.mfu,
                goodput=goodputs[workload.pk],
            )
        )
    return rows
