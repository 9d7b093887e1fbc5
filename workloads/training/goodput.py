"""Goodput: how much of the time a workload held its capacity went into training that counts.

As the field defines it (Google's ML Goodput: productive training time ÷ the time the capacity was held), per
workload and ISO week of the program, in hours of the workload's capacity. The held time splits, without overlap:

1. **down**: held, but no node of the workload's clusters running (provisioning, failed, deleted, not made yet);
2. **no job**: nodes running, no scheduler job on them;
3. **start-up**: a job running, before its first iteration (loading, restoring a checkpoint);
4. **lost to restarts**: iterations computed again after a restart from a checkpoint;
5. **skipped / nan**: iterations the run skipped or whose loss was nan;
6. **no progress**: a job running after its start-up with no iteration logged (stalls, hangs, evaluation and
   checkpoint saves, or a log nobody follows);
7. **productive**: first-time iterations that counted. Goodput = productive ÷ held.

Held is the workload's allocation's days in the week (up to now); without an allocation, the time its nodes ran.
A running node is known from polling (node intervals); a job from its scheduler record; both also from the
training itself (an hour with iterations proves a running job on running nodes), so a cluster the portal does not
poll is not counted down while it trains. An organization's goodput weights each workload by its allocation's
accelerators: productive accelerator-hours ÷ held accelerator-hours (two workloads recording one allocation each
count it whole).

One call reads every workload of a week at once (five grouped reads, whatever their number): the landing page and
the weekly review call it for the whole program.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, fields
from datetime import date, datetime, timedelta

from django.db.models import Q
from django.utils import timezone

from portal.periods import day_start
from tenants.models import Allocation
from workloads.jobs.models import Job
from workloads.training.models import ProgressHour, RunStart
from workloads.usage.models import NodeInterval

Interval = tuple[datetime, datetime]
HOUR = timedelta(hours=1)


@dataclass
class Goodput:
    held: float = 0.0  # hours
    down: float = 0.0
    no_job: float = 0.0
    startup: float = 0.0
    lost: float = 0.0
    skipped: float = 0.0
    no_progress: float = 0.0
    productive: float = 0.0
    accelerators: int = 0  # the capacity's width, the organization's weight

    @property
    def goodput(self) -> float | None:
        return self.productive / self.held if self.held > 0 else None

    @property
    def badput(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in BADPUT}

    def add(self, other: Goodput, weight: float = 1.0) -> None:
        for name in HOURS:
            setattr(self, name, getattr(self, name) + getattr(other, name) * weight)


HOURS = [f.name for f in fields(Goodput) if f.name != "accelerators"]
BADPUT = ["down", "no_job", "startup", "lost", "skipped", "no_progress"]


def union(intervals: list[Interval]) -> list[Interval]:
    merged: list[Interval] = []
    for start, end in sorted(i for i in intervals if i[1] > i[0]):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def intersect(a: list[Interval], b: list[Interval]) -> list[Interval]:
    """The overlap of two unions."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if end > start:
            out.append((start, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def hours(intervals: list[Interval]) -> float:
    return sum((end - start).total_seconds() for start, end in intervals) / 3600


def held_interval(allocation: Allocation | None, start: datetime, end: datetime) -> list[Interval]:
    if allocation is None or allocation.status == Allocation.Status.REVOKED:
        return []
    begin = max(day_start(allocation.starts_on), start)
    finish = min(day_start(allocation.ends_on + timedelta(days=1)), end)
    return [(begin, finish)] if finish > begin else []


def week_goodput(workloads, *, week: date, now: datetime | None = None) -> dict[int, Goodput]:
    """Each workload's goodput in the week starting on Monday `week` (program time), up to `now`."""
    now = now or timezone.now()
    start, end = day_start(week), min(day_start(week + timedelta(days=7)), now)
    workloads = list(workloads)
    ids = [w.pk for w in workloads]
    if end <= start or not ids:
        return {w.pk: Goodput() for w in workloads}
    running = Q(ended_at__isnull=True) | Q(ended_at__gt=start)
    nodes, jobs, training, starts = defaultdict(list), defaultdict(list), defaultdict(list), defaultdict(list)
    for workload, began, ended, seen in NodeInterval.objects.filter(
        running, cluster__workload__in=ids, started_at__lt=end
    ).values_list("cluster__workload", "started_at", "ended_at", "last_seen_at"):
        nodes[workload].append((max(began, start), min(ended or seen, end)))
    for workload, began, ended in Job.objects.filter(
        running, cluster__workload__in=ids, started_at__lt=end
    ).values_list("cluster__workload", "started_at", "ended_at"):
        jobs[workload].append((began, min(ended or now, end)))
    work = defaultdict(Goodput)
    for workload, hour, productive, lost, skipped in ProgressHour.objects.filter(
        run__workload__in=ids, hour__gte=start, hour__lt=end
    ).values_list("run__workload", "hour", "productive_seconds", "lost_seconds", "skipped_seconds"):
        seconds = productive + lost + skipped
        sums = work[workload]
        sums.productive += productive / 3600
        sums.lost += lost / 3600
        sums.skipped += skipped / 3600
        if seconds > 0:
            # The hour's work ends with it; a step longer than the hour began before it.
            finish = min(hour + HOUR, end)
            training[workload].append((max(finish - timedelta(seconds=seconds), start), finish))
    for workload, at in RunStart.objects.filter(run__workload__in=ids, at__gte=start - timedelta(days=7), at__lt=end)\
            .values_list("run__workload", "at"):  # fmt: skip
        starts[workload].append(at)
    result = {}
    for workload in workloads:
        pk = workload.pk
        trained = union(training[pk])
        job_spans = union(jobs[pk] + trained)
        up = union(nodes[pk] + job_spans)
        held = union(held_interval(workload.allocation, start, end)) or up
        sums = work[pk]
        up_held, jobs_held = intersect(up, held), intersect(intersect(job_spans, up), held)
        figures = Goodput(held=hours(held), productive=sums.productive, lost=sums.lost, skipped=sums.skipped)
        figures.down = figures.held - hours(up_held)
        figures.no_job = hours(up_held) - hours(jobs_held)
        figures.startup = hours(intersect(_startups(jobs[pk], sorted(starts[pk]), trained), held))
        in_jobs = hours(jobs_held)
        worked = figures.productive + figures.lost + figures.skipped
        room = max(in_jobs - figures.startup, 0)
        if worked > room:
            # Two runs side by side, or step times that overlap, sum more than the wall time: the held time is
            # split in the shares the runs' work gives, never past it.
            share = room / worked
            figures.productive, figures.lost, figures.skipped = (
                figures.productive * share, figures.lost * share, figures.skipped * share,
            )  # fmt: skip
        figures.no_progress = max(room - figures.productive - figures.lost - figures.skipped, 0)
        allocation = workload.allocation
        figures.accelerators = allocation.ranks // _ranks_per_accelerator(allocation) if allocation else 0
        result[pk] = figures
    return result


def _ranks_per_accelerator(allocation: Allocation) -> int:
    kind = allocation.pool.instance_type
    return max(kind.ranks_per_instance // max(kind.accelerators_per_instance, 1), 1)


def _startups(jobs: list[Interval], starts: list[datetime], trained: list[Interval]) -> list[Interval]:
    """From each job's start to the run's first iteration in it (a start the ingest recorded); a job in which
    the run logged no start and no iteration spent all its time starting (it never trained)."""
    spans = []
    for began, ended in jobs:
        first = next((at for at in starts if began <= at <= ended), None)
        if first is not None:
            spans.append((began, first))
        elif not intersect([(began, ended)], trained):
            spans.append((began, ended))
    return union(spans)


def organization_goodput(figures: list[Goodput]) -> Goodput:
    """Workloads' figures summed in accelerator-hours, weighted by each one's capacity (a workload without an
    allocation weighs 1)."""
    total = Goodput()
    for item in figures:
        weight = item.accelerators or 1
        total.add(item, weight)
        total.accelerators += item.accelerators
    return total
