"""Busy accelerator-time from the nodes' own telemetry, for clusters whose scheduler reports no jobs (an EKS
cluster, or a Slurm cluster without the reporter): Trainium's NeuronCore utilization, read by the Neuron monitor.

- A reading's utilization stands for the time since the node's previous reading, at most MAX_SPAN: a reporter that
  stopped for a day does not turn one reading into a day of busy time. The first reading of a node covers nothing.
- Busy accelerator-time = utilization × the instance type's accelerators × that time, split over program hours
  (AcceleratorBusyHour, one row per node and hour, added to by each reading).
- The rollup (workloads.jobs.busy) counts it as it counts a job on the node, never past what the node ran, and only
  on clusters that never reported a job: where the scheduler reports, its jobs are the busy time.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from django.db.models import F, Min
from django.utils import timezone

from workloads.clusters.models import Cluster, ClusterNode
from workloads.jobs.models import Job
from workloads.usage.definitions import overlap
from workloads.usage.dirty import mark_days
from workloads.usage.models import AcceleratorBusyHour

MAX_SPAN = timedelta(minutes=15)  # a reading stands for at most this long before it
HOUR = timedelta(hours=1)


def hour_of(moment: datetime) -> datetime:
    """The start (UTC) of the program-time-zone hour holding `moment`."""
    return timezone.localtime(moment).replace(minute=0, second=0, microsecond=0).astimezone(UTC)


def record_utilization(
    cluster: Cluster, readings: Mapping[ClusterNode, float], *, accelerators: Mapping[str, int], now: datetime
) -> None:
    """Add each node's busy time since its previous reading (`node.gpu_read_at`, as it was before this one)."""
    rows: dict[tuple[ClusterNode, datetime], tuple[int, int]] = {}
    for node, utilization in readings.items():
        count = accelerators.get(node.instance_type, 0)
        if node.gpu_read_at is None or node.gpu_read_at >= now or not count:
            continue
        start = max(node.gpu_read_at, now - MAX_SPAN)
        hour = hour_of(start)
        while hour < now:
            if part := overlap(start, now, hour, hour + HOUR):
                rows[(node, hour)] = (round(part * utilization * count), part)
            hour += HOUR
    if not rows:
        return
    for (node, hour), (busy, read) in rows.items():
        updated = AcceleratorBusyHour.objects.filter(node=node, hour=hour).update(
            busy_accelerator_microseconds=F("busy_accelerator_microseconds") + busy,
            read_microseconds=F("read_microseconds") + read,
        )
        if not updated:
            AcceleratorBusyHour.objects.create(
                organization_id=cluster.organization_id, cluster=cluster, node=node, hour=hour,
                busy_accelerator_microseconds=busy, read_microseconds=read,
            )  # fmt: skip
    first = min(hour for _node, hour in rows)
    mark_days(cluster.organization_id, timezone.localdate(first), timezone.localdate(now))


def utilization_demand(
    organization_ids: list[int], window: tuple[datetime, datetime]
) -> tuple[dict[tuple[int, int, datetime], int], dict[int, datetime]]:
    """(cluster, node, hour) → busy accelerator-µs read on clusters that never reported a job, inside the window;
    and each organization's first such hour (from when its busy time is a figure)."""
    with_jobs = Job.objects.filter(organization_id__in=organization_ids).values("cluster_id").distinct()
    rows = (
        AcceleratorBusyHour.objects.filter(organization_id__in=organization_ids)
        .exclude(cluster_id__in=with_jobs)
        .exclude(node=None)
    )
    demand: dict[tuple[int, int, datetime], int] = defaultdict(int)
    for cluster_id, node_id, hour, busy in rows.filter(hour__gte=window[0], hour__lt=window[1]).values_list(
        "cluster_id", "node_id", "hour", "busy_accelerator_microseconds"
    ):
        demand[(cluster_id, node_id, hour)] += busy
    firsts = dict(rows.values("organization_id").annotate(first=Min("hour")).values_list("organization_id", "first"))
    return demand, firsts
