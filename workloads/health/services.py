"""Health events from the cloud's node status, read on every poll: a node's fault is recorded, kept open while the
condition holds and resolved when it clears (GPU telemetry: workloads.health.telemetry). Critical ones go to a
support case (workloads.health.incidents).

One open event per node and kind (a database constraint): a repeated poll of the same failed node keeps the
event it opened, never adds a second.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime

from django.db.models import Q
from django.utils.translation import gettext as _

from workloads.clusters.listing import Listing
from workloads.clusters.models import Cluster
from workloads.health.incidents import report_health
from workloads.health.models import HealthEvent

Kind = HealthEvent.Kind
# The cloud's words for a node in trouble (HyperPod's InstanceStatus) and the event each opens.
NODE_HEALTH_KINDS = {"Failure": Kind.NODE_FAILURE, "NotFound": Kind.NODE_NOT_FOUND}
# The kinds a listing opens and resolves; the others (GPU telemetry) are not its business.
NODE_KINDS = (Kind.NODE_FAILURE, Kind.NODE_NOT_FOUND, Kind.NODE_REPLACED)
# What makes a cluster degraded (has_open_events).
DEGRADING = Q(source=HealthEvent.Source.CLOUD) | Q(severity=HealthEvent.Severity.CRITICAL)


def apply_node_statuses(listings: Iterable[Listing], *, now: datetime) -> None:
    """From one listing of each cluster's nodes (workloads.clusters.listing.Listing: `seen`, each node with what the
    cloud said of it; `gone`, nodes no longer listed): a node in Failure / NotFound has an open critical event until
    it recovers or goes; a node that went has a "replaced" warning until its group is back to full strength with
    running nodes. Several clusters (a poll batch) are read and written at once."""
    listings = list(listings)
    open_events: dict[int, dict[tuple[str, str], HealthEvent]] = defaultdict(dict)
    # An event carries its cluster's organization: reading by cluster reads no other tenant's rows.
    for event in HealthEvent.objects.filter(
        cluster__in=[listing.cluster.pk for listing in listings], resolved_at=None, kind__in=NODE_KINDS
    ):
        open_events[event.cluster_id][(event.instance_id, event.kind)] = event
    new_events, resolved, changes = [], [], []
    for listing in listings:
        opened, cleared = _node_statuses(listing, open_events[listing.cluster.pk], now)
        new_events += opened
        resolved += cleared
        if opened or cleared:
            changes.append((listing.cluster, opened, cleared))
    HealthEvent.objects.bulk_create(new_events)
    if resolved:
        HealthEvent.objects.bulk_update(resolved, ["resolved_at"])
    for cluster, opened, cleared in changes:
        report_health(cluster, opened=opened, cleared=cleared)


def _node_statuses(listing: Listing, open_events: dict, now: datetime) -> tuple[list, list]:
    """One cluster's events to open and to resolve."""
    cluster, seen, gone, group_targets = listing.cluster, listing.seen, listing.gone, listing.group_targets
    new_events, resolved = [], []
    for node, info in seen:
        for cloud_word, kind in NODE_HEALTH_KINDS.items():
            event = open_events.get((info.instance_id, kind))
            if info.status == cloud_word and event is None:
                new_events.append(
                    HealthEvent(
                        organization_id=cluster.organization_id,
                        cluster=cluster,
                        node=node,
                        instance_id=info.instance_id,
                        group_name=info.group,
                        kind=kind,
                        severity=HealthEvent.Severity.CRITICAL,
                        message=info.message or info.status,
                        observed_at=now,
                    )
                )
            elif info.status != cloud_word and event is not None:
                event.resolved_at = now
                resolved.append(event)

    for node in gone:
        if (node.instance_id, Kind.NODE_REPLACED) not in open_events:
            new_events.append(
                HealthEvent(
                    organization_id=cluster.organization_id,
                    cluster=cluster,
                    node=node,
                    instance_id=node.instance_id,
                    group_name=node.group_name,
                    kind=Kind.NODE_REPLACED,
                    severity=HealthEvent.Severity.WARNING,
                    message=_("Node %(id)s of %(group)s is no longer listed: replaced or terminated.")
                    % {"id": node.instance_id, "group": node.group_name},
                    observed_at=now,
                )
            )
        for event_key in ((node.instance_id, Kind.NODE_FAILURE), (node.instance_id, Kind.NODE_NOT_FOUND)):
            if event_key in open_events:
                open_events[event_key].resolved_at = now
                resolved.append(open_events[event_key])

    # A replacement is over when its group is back to full strength with healthy nodes.
    listed = {info.instance_id for _node, info in seen}
    healthy_per_group: dict[str, int] = defaultdict(int)
    for _node, info in seen:
        if info.status == "Running":
            healthy_per_group[info.group] += 1

    def back_to_strength(group: str) -> bool:
        return healthy_per_group[group] >= group_targets.get(group, 1)

    for (instance_id, kind), event in open_events.items():
        if kind == Kind.NODE_REPLACED and (instance_id in listed or back_to_strength(event.group_name)):
            event.resolved_at = now  # it came back under the same id, or its group is whole again
            resolved.append(event)
    for event in new_events:
        if event.kind == Kind.NODE_REPLACED and back_to_strength(event.group_name):
            # Already replaced by the time we looked: worth recording, nothing left to wait for.
            event.resolved_at = now
    return new_events, resolved


def resolve_open_events(cluster: Cluster, now: datetime) -> None:
    """The cluster is gone: nothing of it can still be faulty."""
    HealthEvent.objects.for_org(cluster.organization).filter(cluster=cluster, resolved_at=None).update(resolved_at=now)


def has_open_events(cluster: Cluster) -> bool:
    """A cluster is degraded while a node event from the cloud or a critical GPU event is open. GPU warnings
    (power capping, lifetime ECC counts) show on the health board without degrading the cluster."""
    open_events = HealthEvent.objects.for_org(cluster.organization).filter(cluster=cluster, resolved_at=None)
    return open_events.filter(DEGRADING).exists()


def clusters_with_open_events(cluster_ids: Iterable[int]) -> set[int]:
    """`has_open_events` for several clusters in one query: the ids of those that are degraded."""
    events = HealthEvent.objects.filter(cluster__in=list(cluster_ids), resolved_at=None).filter(DEGRADING)
    return set(events.values_list("cluster_id", flat=True).distinct())
