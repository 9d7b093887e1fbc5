"""Node run intervals: the raw input of usage accounting, recorded from every poll.

A listed node is running (and billed) from its launch: one open interval per node, which every poll that lists
the node extends (`last_seen_at`) and which closes when the node is no longer listed. A node seen again after
its interval was closed restarts where the closed one ended, so no hour is ever counted twice. Each change marks
the organization's days for the usage rollup, in the same transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db.models import Max, Min
from django.utils import timezone

from workloads.clusters.listing import Listing
from workloads.clusters.models import Cluster
from workloads.usage.dirty import mark_days, mark_days_from
from workloads.usage.models import NodeInterval


def record_runs(listings: Iterable[Listing], *, now: datetime) -> None:
    """Extend the open intervals of the listed nodes, open one for each listed node without one, close the
    intervals of the nodes that went; mark the days whose running time moved. Several clusters (a poll batch,
    each a workloads.clusters.listing.Listing) are read and written at once."""
    listings = list(listings)
    seen_ids = [node.pk for listing in listings for node, _info in listing.seen]
    gone_ids = [node.pk for listing in listings for node in listing.gone]
    if not seen_ids and not gone_ids:
        return
    touched_ids = {*seen_ids, *gone_ids}
    # An interval carries its cluster's organization: reading by cluster reads no other tenant's rows.
    open_runs = NodeInterval.objects.filter(cluster__in=[listing.cluster.pk for listing in listings], ended_at=None)
    open_intervals = set()
    moved: dict[int, datetime] = {}  # organization -> the earliest moment whose running time moved
    for organization_id, node_id, last_seen in open_runs.values_list("organization_id", "node_id", "last_seen_at"):
        open_intervals.add(node_id)
        if node_id in touched_ids:
            moved[organization_id] = min(last_seen, moved.get(organization_id, last_seen))
    reopened = [pk for pk in seen_ids if pk not in open_intervals]
    last_ends = {}
    if reopened:
        last_ends = dict(
            NodeInterval.objects.filter(node_id__in=reopened)
            .values("node_id")
            .annotate(last=Max("ended_at"))
            .values_list("node_id", "last")
        )
    new_intervals = []
    for listing in listings:
        cluster = listing.cluster
        for node, info in listing.seen:
            if node.pk in open_intervals:
                continue
            started = info.launch_time or now
            if last_ends.get(node.pk) is not None and last_ends[node.pk] > started:
                started = last_ends[node.pk]
            new_intervals.append(
                NodeInterval(
                    organization_id=cluster.organization_id,
                    cluster=cluster,
                    node=node,
                    instance_id=node.instance_id,
                    instance_type=node.instance_type,
                    region=cluster.region,
                    started_at=started,
                    last_seen_at=now,
                )
            )
            moved[cluster.organization_id] = min(started, moved.get(cluster.organization_id, started))
    if seen_ids:
        NodeInterval.objects.filter(ended_at=None, node__in=seen_ids).update(last_seen_at=now)
    if gone_ids:
        NodeInterval.objects.filter(node__in=gone_ids, ended_at=None).update(ended_at=now, last_seen_at=now)
    NodeInterval.objects.bulk_create(new_intervals, ignore_conflicts=True)
    mark_days_from({organization_id: timezone.localdate(moment) for organization_id, moment in moved.items()})


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
