"""Reading GPU health from Prometheus (Amazon Managed Service for Prometheus or a self-managed one), on beat's
schedule: two instant queries per source and poll, whatever the number of nodes — every DCGM and Neuron monitor
family the rules read (workloads.health.dcgm, with the Xid count and the temperature families, and
workloads.health.neuron), now, and the throttling counters one window earlier (violations are judged on their
increase).

Each series is matched to a node of a live cluster in the source's scope: by an instance id label, else by host
name or address (workloads.clusters.hosts), narrowed by the source's cluster label (the cluster's name in AWS or
in the portal) where two organizations' networks reuse an address. What matches no node is counted on the
source, for the health rules page; what does is applied per cluster (workloads.health.telemetry).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime, timedelta

from django.utils import timezone

from portal import cloud
from portal.cloud.prometheus import PrometheusEndpoint
from portal.cloud.prometheus import query as prometheus_query
from workloads.clusters.hosts import HostIndex
from workloads.clusters.models import Cluster, ClusterNode
from workloads.health import neuron, temperature
from workloads.health.dcgm import METRIC_RULES, XID_COUNT_METRIC, XID_METRIC, Pair, host_of, prometheus_vector_pairs
from workloads.health.models import HealthEvent, PrometheusSource
from workloads.health.telemetry import (
    COUNTER_METRICS,
    Outcome,
    apply_readings,
    classify_node,
    expected_gpus,
    gpu_catalog,
)
from workloads.telemetry_errors import ParseError

log = logging.getLogger(__name__)

WINDOW = timedelta(minutes=10)  # throttling is judged over the last ten minutes
FAMILIES = (
    XID_METRIC,
    XID_COUNT_METRIC,
    *(rule.metric for rule in METRIC_RULES if rule.metric),
    *temperature.FAMILIES,
    *neuron.FAMILIES,
)
MAX_UNMATCHED = 20  # hosts kept on the source to show


def selector(names) -> str:
    return '{__name__=~"' + "|".join(sorted(names)) + '"}'


def endpoint_for(source: PrometheusSource) -> PrometheusEndpoint:
    session = None
    if source.sigv4_region and source.organization is not None and source.organization.role_arn:
        # An organization's own workspace is read with its role, like its clusters.
        access = cloud.AccountAccess.for_organization(source.organization, source.sigv4_region)
        session = cloud.session_for(access, profile="poll")
    return PrometheusEndpoint(url=source.url, region=source.sigv4_region, session=session)


def poll_source(source: PrometheusSource, *, now: datetime | None = None, query: Callable | None = None) -> Outcome:
    """One poll of one source. A failed query leaves the events as they are and says why on the source."""
    now = now or timezone.now()
    query = query or prometheus_query
    try:
        endpoint = endpoint_for(source)
        current = prometheus_vector_pairs(query(endpoint, selector(FAMILIES), at=now))
        previous = prometheus_vector_pairs(query(endpoint, selector(COUNTER_METRICS), at=now - WINDOW))
    except (cloud.CloudError, ParseError) as error:
        message = getattr(error, "message", str(error))
        PrometheusSource.objects.filter(pk=source.pk).update(last_polled_at=now, last_error=message[:500])
        log.warning("GPU telemetry from %s failed: %s", source.name, message)
        return Outcome()
    outcome = apply_source(source, current, previous, now=now)
    PrometheusSource.objects.filter(pk=source.pk).update(
        last_polled_at=now, last_error="", last_series=len(current), unmatched_hosts=outcome.unmatched_hosts
    )
    return outcome


def apply_source(source: PrometheusSource, current: list[Pair], previous: list[Pair], *, now: datetime) -> Outcome:
    clusters = Cluster.objects.filter(status__in=(Cluster.Status.IN_SERVICE, Cluster.Status.DEGRADED))
    if source.organization_id is not None:
        clusters = clusters.filter(organization_id=source.organization_id)
    clusters = {c.pk: c for c in clusters.select_related("organization", "workload")}
    nodes = list(ClusterNode.objects.filter(cluster_id__in=clusters, gone_at=None))
    index = HostIndex(nodes, {pk: c.slurm_nodes or {} for pk, c in clusters.items()})
    names = {pk: {c.cloud_name, c.name} for pk, c in clusters.items()}
    unmatched: set[str] = set()

    def node_of(labels) -> ClusterNode | None:
        host = host_of(labels)
        named = labels.get(source.cluster_label)
        candidates = [pk for pk in index.clusters_with(host) if named is None or named in names[pk]]
        if len(candidates) != 1:
            unmatched.add(host if not candidates else f"{host} ({len(candidates)} clusters)")
            return None
        return index.live(candidates[0], host)

    now_by_node: dict[ClusterNode, list[Pair]] = defaultdict(list)
    before_by_node: dict[ClusterNode, list[Pair]] = defaultdict(list)
    for pairs, into in ((current, now_by_node), (previous, before_by_node)):
        for labels, value in pairs:
            try:
                node = node_of(labels)
            except ParseError:
                node = None  # a series naming no host at all
            if node is not None:
                into[node].append((labels, value))
    catalog = gpu_catalog()
    by_cluster: dict[int, dict[ClusterNode, list]] = defaultdict(dict)
    refused: set[ClusterNode] = set()
    for node, pairs in now_by_node.items():
        try:
            by_cluster[node.cluster_id][node] = classify_node(
                node, pairs, catalog=catalog, previous=before_by_node.get(node), window_seconds=WINDOW.total_seconds()
            )
        except ParseError as error:  # one node's malformed or impossible series never stops the others
            unmatched.add(f"{node.hostname or node.instance_id}: {error}")
            refused.add(node)  # it did report: not silent, its events stand as they were
    outcome = Outcome(unmatched_hosts=sorted(unmatched)[:MAX_UNMATCHED])
    for cluster_id, readings in sorted(by_cluster.items()):  # clusters locked in one order: no deadlock
        # A GPU or Trainium node of a reporting cluster that sent nothing: its exporter (or the node) has gone quiet.
        silent = [
            n for n in nodes
            if n.cluster_id == cluster_id and n not in readings and n not in refused and n.status == "Running"
            and (expected_gpus(n.instance_type, catalog) is not None
                 or neuron.expected_counts(n.instance_type, catalog) is not None)
        ]  # fmt: skip
        outcome.add(apply_readings(clusters[cluster_id], readings, source=HealthEvent.Source.PROMETHEUS, now=now,
                                   silent=silent))  # fmt: skip
    return outcome


def poll_all(*, now: datetime | None = None, query: Callable | None = None) -> dict[str, int]:
    """Beat's task: every enabled source once."""
    done = {"sources": 0, "opened": 0, "resolved": 0}
    for source in PrometheusSource.objects.filter(enabled=True).select_related("organization"):
        try:
            outcome = poll_source(source, now=now, query=query)
        except Exception as error:  # one source's failure never stops the others; it is shown on the source
            log.exception("GPU telemetry from %s failed", source.name)
            message = f"{type(error).__name__}: {error}"[:500]
            PrometheusSource.objects.filter(pk=source.pk).update(
                last_polled_at=now or timezone.now(), last_error=message
            )
            continue
        done["sources"] += 1
        done["opened"] += outcome.opened
        done["resolved"] += outcome.resolved
    return done
