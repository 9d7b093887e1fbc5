"""Node run intervals: the raw input of usage accounting, recorded from every poll.

A listed node is running (and billed) from its launch: one open interval per node, which every poll that lists
the node extends (`last_seen_at`) and which closes when the node is no longer listed. A node seen again after
its interval was closed restarts where the closed one ended, so no hour is ever counted twice. Each change marks
the organization's days for the usage rollup, in the same transaction.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import Max, Min
from django.utils import timezone

from portal.cloud import NodeInfo
from workloads.clusters.models import Cluster, ClusterNode
from workloads.usage.models import NodeInterval
from workloads.usage.rollups import mark_days


def record_runs(
    cluster: Cluster, *, seen: list[tuple[ClusterNode, NodeInfo]], gone: list[ClusterNode], now: datetime
) -> None:
    """Extend the open intervals of the listed nodes, open one for each listed node without one, close the
    intervals of the nodes that went; mark the days whose running time moved."""
    org = cluster.organization
    intervals = NodeInterval.objects.for_org(org).filter(cluster=cluster)
    open_intervals = set(intervals.filter(ended_at=None).values_list("node_id", flat=True))
    seen_ids = [node.pk for node, _info in seen]
    touched = intervals.filter(ended_at=None, node__in=[*seen_ids, *[n.pk for n in gone]])
    first_moved = touched.aggregate(first=Min("last_seen_at"))["first"]
    reopened = [pk for pk in seen_ids if pk not in open_intervals]
    last_ends = dict(
        intervals.filter(node_id__in=reopened)
        .values("node_id")
        .annotate(last=Max("ended_at"))
        .values_list("node_id", "last")
    )
    new_intervals = []
    for node, info in seen:
        if node.pk in open_intervals:
            continue
        started = info.launch_time or now
        if node.pk in last_ends and last_ends[node.pk] > started:
            started = last_ends[node.pk]
        new_intervals.append(
            NodeInterval(
                organization=org,
                cluster=cluster,
                node=node,
                instance_id=node.instance_id,
                instance_type=node.instance_type,
                region=cluster.region,
                started_at=started,
                last_seen_at=now,
            )
        )
    if seen_ids:
        intervals.filter(ended_at=None, node__in=seen_ids).update(last_seen_at=now)
    if gone:
        intervals.filter(node__in=gone, ended_at=None).update(ended_at=now, last_seen_at=now)
    NodeInterval.objects.bulk_create(new_intervals, ignore_conflicts=True)
    starts = [first_moved, *(i.started_at for i in new_intervals)]
    if moved := [moment for moment in starts if moment is not None]:
        mark_days(org.pk, timezone.localdate(min(moved)))


def close_runs(cluster: Cluster, now: datetime) -> None:
    """The cluster is gone: its open runs end now."""
    runs = NodeInterval.objects.for_org(cluster.organization).filter(cluster=cluster, ended_at=None)
    first_moved = runs.aggregate(first=Min("last_seen_at"))["first"]
    runs.update(ended_at=now, last_seen_at=now)
    if first_moved is not None:
        mark_days(cluster.organization_id, timezone.localdate(first_moved))


def node_hours(cluster: Cluster) -> float:
    """Instance-hours the cluster's nodes ran (open intervals count up to the last poll that saw them)."""
    total = 0.0
    for interval in NodeInterval.objects.for_org(cluster.organization).filter(cluster=cluster):
        total += (interval.counted_until - interval.started_at).total_seconds() / 3600
    return total
