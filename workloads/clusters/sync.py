"""Bringing a cluster's nodes in line with what the cloud lists, on every poll.

The nodes are upserted here; what follows from them lives with its capability: health events from the cloud's
node status in workloads.health, run intervals (the input of usage accounting) in workloads.usage.
Repeating a poll changes nothing.
"""

from __future__ import annotations

from datetime import datetime

from portal.cloud import ClusterDescription, NodeInfo
from workloads.clusters.models import Cluster, ClusterNode
from workloads.health.services import apply_node_statuses, resolve_open_events
from workloads.usage.intervals import close_runs, record_runs


def sync_nodes(cluster: Cluster, description: ClusterDescription, nodes: list[NodeInfo], now: datetime) -> None:
    """Upsert the listed nodes, mark the ones no longer listed gone, then record their health and runs."""
    org = cluster.organization
    known = {n.instance_id: n for n in ClusterNode.objects.for_org(org).filter(cluster=cluster)}
    listed = set()
    to_create, to_update = [], []
    for info in nodes:
        listed.add(info.instance_id)
        node = known.get(info.instance_id)
        if node is None:
            node = ClusterNode(
                organization=org,
                cluster=cluster,
                instance_id=info.instance_id,
                first_seen_at=now,
            )
            to_create.append(node)
        elif (node.status, node.status_message, node.gone_at) != (info.status, info.message[:500], None) or (
            info.hostname and info.hostname != node.hostname
        ):
            to_update.append(node)
        node.group_name, node.instance_type = info.group, info.instance_type
        node.status, node.status_message = info.status, info.message[:500]
        # The host name stays when a listing leaves it out (the emulator never gives one).
        node.hostname = info.hostname[:255] or node.hostname
        node.launch_time, node.last_seen_at, node.gone_at = info.launch_time, now, None
    ClusterNode.objects.bulk_create(to_create)
    unchanged = [n.pk for n in known.values() if n.instance_id in listed and n not in to_update]
    if unchanged:
        ClusterNode.objects.filter(pk__in=unchanged).update(last_seen_at=now)
    if to_update:
        ClusterNode.objects.bulk_update(
            to_update,
            [
                "group_name",
                "instance_type",
                "hostname",
                "status",
                "status_message",
                "launch_time",
                "last_seen_at",
                "gone_at",
            ],
        )
    nodes_by_id = {**known, **{n.instance_id: n for n in to_create}}
    seen = [(nodes_by_id[info.instance_id], info) for info in nodes]

    # Nodes no longer listed: replaced or terminated.
    gone = [n for n in known.values() if n.instance_id not in listed and n.gone_at is None]
    for node in gone:
        node.gone_at = now
    if gone:
        ClusterNode.objects.bulk_update(gone, ["gone_at"])

    targets = {g.name: g.target_count for g in description.groups}
    if not targets:
        targets = {g.name: g.instance_count for g in cluster.groups.all()}
    apply_node_statuses(cluster, seen=seen, gone=gone, group_targets=targets, now=now)
    record_runs(cluster, seen=seen, gone=gone, now=now)


def close_nodes(cluster: Cluster, now: datetime) -> None:
    """The cluster is gone: every node with it, every run closed, every open health event resolved."""
    ClusterNode.objects.for_org(cluster.organization).filter(cluster=cluster, gone_at=None).update(gone_at=now)
    close_runs(cluster, now)
    resolve_open_events(cluster, now)
