"""Bringing clusters' nodes in line with what the cloud lists, on every poll.

The nodes are upserted here; what follows from them lives with its capability: health events from the cloud's
node status in workloads.health, run intervals (the input of usage accounting) in workloads.usage.
Repeating a poll changes nothing.

A poll batch syncs all its clusters at once (`sync_listings`): one read of their nodes and one write of each kind,
not a handful of queries per cluster — those small writes were most of a poll's cost beside the two cloud calls
(docs/operations/benchmarks.md, "Cluster polling").
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from portal.cloud import ClusterDescription, NodeInfo
from workloads.clusters.listing import Listing
from workloads.clusters.models import Cluster, ClusterNode
from workloads.health.services import apply_node_statuses, resolve_open_events
from workloads.usage.intervals import close_runs, record_runs

NODE_FIELDS = ["group_name", "instance_type", "hostname", "status", "status_message", "launch_time", "last_seen_at",
               "gone_at"]  # fmt: skip


def sync_nodes(cluster: Cluster, description: ClusterDescription, nodes: list[NodeInfo], now: datetime) -> None:
    """Upsert the listed nodes, mark the ones no longer listed gone, then record their health and runs."""
    sync_listings([(cluster, description, nodes)], now)


def sync_listings(answers: list[tuple[Cluster, ClusterDescription, list[NodeInfo]]], now: datetime) -> None:
    """`sync_nodes` for several clusters at once (a poll batch's), in the caller's transaction."""
    if not answers:
        return
    known: dict[int, dict[str, ClusterNode]] = defaultdict(dict)
    # Each node carries its cluster's organization: reading by cluster reads no other tenant's rows.
    for node in ClusterNode.objects.filter(cluster__in=[cluster.pk for cluster, _d, _n in answers]):
        known[node.cluster_id][node.instance_id] = node
    listings, to_create, to_update, unchanged, gone = [], [], [], [], []
    for cluster, description, nodes in answers:
        listing = _listing(cluster, known[cluster.pk], nodes, now, to_create, to_update, unchanged)
        targets = {g.name: g.target_count for g in description.groups}
        listing.group_targets = targets or {g.name: g.instance_count for g in cluster.groups.all()}
        gone += listing.gone
        listings.append(listing)
    ClusterNode.objects.bulk_create(to_create)
    if unchanged:
        ClusterNode.objects.filter(pk__in=unchanged).update(last_seen_at=now)
    if to_update:
        ClusterNode.objects.bulk_update(to_update, NODE_FIELDS)
    if gone:
        ClusterNode.objects.bulk_update(gone, ["gone_at"])
    apply_node_statuses(listings, now=now)
    record_runs(listings, now=now)


def _listing(cluster, known, nodes, now, to_create, to_update, unchanged) -> Listing:
    """Compares one cluster's listing with its known nodes: fills the batch's writes, returns what it saw."""
    listing = Listing(cluster)
    listed = set()
    for info in nodes:
        if info.instance_id in listed:
            continue  # listed twice (a page repeated): once is enough
        listed.add(info.instance_id)
        node = known.get(info.instance_id)
        message = info.message[:500]
        if node is None:
            node = ClusterNode(
                organization_id=cluster.organization_id,
                cluster=cluster,
                instance_id=info.instance_id,
                first_seen_at=now,
            )
            to_create.append(node)
        elif (node.status, node.status_message, node.gone_at) != (info.status, message, None) or (
            info.hostname and info.hostname != node.hostname
        ):
            to_update.append(node)
        else:
            unchanged.append(node.pk)
        node.group_name, node.instance_type = info.group, info.instance_type
        node.status, node.status_message = info.status, message
        # The host name stays when a listing leaves it out (the emulator never gives one).
        node.hostname = info.hostname[:255] or node.hostname
        node.launch_time, node.last_seen_at, node.gone_at = info.launch_time, now, None
        listing.seen.append((node, info))
    # Nodes no longer listed: replaced or terminated.
    for node in known.values():
        if node.instance_id not in listed and node.gone_at is None:
            node.gone_at = now
            listing.gone.append(node)
    return listing


def close_nodes(cluster: Cluster, now: datetime) -> None:
    """The cluster is gone: every node with it, every run closed, every open health event resolved."""
    ClusterNode.objects.for_org(cluster.organization).filter(cluster=cluster, gone_at=None).update(gone_at=now)
    close_runs(cluster, now)
    resolve_open_events(cluster, now)
