"""GPU readings (workloads.health.dcgm) become health events per node and GPU: open while the condition holds,
resolved when the readings are normal again, never duplicated by repeated reads (one open event per node, GPU and
kind: a database constraint). Two sources, one path: the exporter text a cluster posts for one node
(`ingest_exporter_text`), and a Prometheus poll over many clusters (workloads.health.polling).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from tenants.models import InstanceType
from workloads.clusters.hosts import HostIndex
from workloads.clusters.models import Cluster, ClusterNode
from workloads.health import neuron, temperature
from workloads.health.dcgm import (
    METRIC_RULES,
    GpuReading,
    Pair,
    classify,
    host_of,
    is_blank,
    parse_exposition,
    sample_pairs,
    unsupported_fields,
)
from workloads.health.incidents import report_health
from workloads.health.models import HealthEvent, PrometheusSource
from workloads.telemetry_errors import field_errors
from workloads.usage.utilization import record_utilization

Kind = HealthEvent.Kind
KINDS = {
    "xid": Kind.GPU_XID,
    **{rule.kind: Kind(rule.kind) for rule in METRIC_RULES},
    **{kind: Kind(kind) for kind in neuron.KINDS},  # Trainium's, from the Neuron monitor (workloads.health.neuron)
}
GPU_KINDS = frozenset(KINDS.values())
COUNTER_METRICS = frozenset(rule.metric for rule in METRIC_RULES if rule.min_fraction is not None)
COUNTER_KINDS = frozenset(KINDS[rule.kind] for rule in METRIC_RULES if rule.min_fraction is not None)
MIN_WINDOW = timedelta(minutes=1)  # throttling is judged over at least this long
GPU_ACCELERATORS = ("H100", "H200", "A100")  # catalog accelerators the DCGM exporter reports on


@dataclass
class Outcome:
    readings: int = 0
    opened: int = 0
    resolved: int = 0
    nodes: int = 0
    unmatched_hosts: list[str] = field(default_factory=list)

    def add(self, other: Outcome) -> None:
        self.readings += other.readings
        self.opened += other.opened
        self.resolved += other.resolved
        self.nodes += other.nodes


def sources_for(organization) -> list[PrometheusSource]:
    """The enabled Prometheus sources that read an organization's clusters: its own and the program's."""
    return list(
        PrometheusSource.objects.filter(enabled=True).filter(Q(organization=None) | Q(organization=organization))
    )


def expected_gpus(instance_type: str, catalog: Mapping[str, tuple[str, int, int]]) -> int | None:
    """GPUs a node of this type should report (None: not a GPU the exporter watches, e.g. Trainium)."""
    accelerator, count, _ranks = catalog.get(instance_type, ("", 0, 0))
    return count if any(name in accelerator for name in GPU_ACCELERATORS) else None


def gpu_catalog() -> dict[str, tuple[str, int, int]]:
    """Each type's accelerator, accelerators and ranks (NeuronCores on Trainium: 16 devices, 32 cores on trn1)."""
    rows = InstanceType.objects.values_list(
        "api_name", "accelerator", "accelerators_per_instance", "ranks_per_instance"
    )
    return {name: (accelerator, count, ranks) for name, accelerator, count, ranks in rows}


@dataclass(frozen=True)
class NodeReading:
    """What one read said of one node: its faults, and whether the throttling counters could be judged (they need
    an earlier snapshot at least MIN_WINDOW old: without one, what they showed before stands)."""

    faults: list[GpuReading]
    counters_judged: bool
    # GPU index -> the event kinds whose field came as a DCGM blank: no reading, so their events stand as they are.
    unsupported: dict[int, list[str]] = field(default_factory=dict)
    utilization: float | None = None  # Neuron nodes: the share of their NeuronCores busy (workloads.health.neuron)


def classify_node(
    node: ClusterNode,
    pairs: list[Pair],
    *,
    catalog: Mapping[str, tuple[str, int]],
    previous: list[Pair] | None,
    window_seconds: float | None,
) -> NodeReading:
    """One node's readings; every sample is taken to be about this node (the caller matched it)."""
    host = node.instance_id
    expected_neuron = neuron.expected_counts(node.instance_type, catalog)
    if expected_neuron is not None or neuron.is_neuron(pairs):  # a Trainium node: the Neuron monitor's rules
        read = neuron.classify(pairs, expected=expected_neuron, default_host=host)
        return NodeReading(faults=list(read.faults), counters_judged=True, utilization=read.utilization)
    mine = [({**labels, "instance_id": host}, value) for labels, value in pairs]
    judged = bool(previous) and window_seconds is not None and window_seconds >= MIN_WINDOW.total_seconds()
    before = [({**labels, "instance_id": host}, value) for labels, value in previous] if judged else None
    faults = classify(
        mine,
        expected_gpus=expected_gpus(node.instance_type, catalog),
        previous=before,
        window_seconds=window_seconds if judged else None,
    )
    blank = {gpu: sorted(KINDS[kind] for kind in kinds) for (_host, gpu), kinds in unsupported_fields(mine).items()}
    return NodeReading(faults=list(faults), counters_judged=judged, unsupported=blank)


def worst_per_gpu(faults: Iterable[GpuReading]) -> dict[tuple[int, str], GpuReading]:
    """One reading per GPU and kind, the worst of them: two series of one GPU (two scrape jobs, a Prometheus pair)
    may disagree, and one condition is one event."""
    worst: dict[tuple[int, str], GpuReading] = {}
    for reading in faults:
        key = (reading.gpu, KINDS[reading.kind])
        rank = (reading.severity == "critical", reading.value)
        if key not in worst or rank > (worst[key].severity == "critical", worst[key].value):
            worst[key] = reading
    return worst


@transaction.atomic
def apply_readings(
    cluster: Cluster,
    readings: Mapping[ClusterNode, NodeReading],
    *,
    source: str,
    now: datetime,
    silent: Iterable[ClusterNode] = (),
) -> Outcome:
    """The cluster's GPU events for the nodes read (`readings`: each node's complete faults, so what is not in them
    is normal), and a warning for each node whose exporter said nothing while others did (`silent`: nothing was
    read of it, so its other events stay as they are)."""
    org = cluster.organization
    # One cluster's readings one at a time: a poll and a post (or two polls) never open the same event twice,
    # nor two cases for one cluster.
    Cluster.objects.select_for_update().filter(pk=cluster.pk).first()
    silent = list(silent)
    ids = [node.instance_id for node in (*readings, *silent)]
    open_events = {
        (e.instance_id, e.gpu, e.kind): e
        for e in HealthEvent.objects.for_org(org).filter(
            cluster=cluster, resolved_at=None, instance_id__in=ids, kind__in=[*GPU_KINDS, Kind.EXPORTER_SILENT]
        )
    }
    new, resolved, still, escalated = [], [], set(), set()
    for node, reading in readings.items():
        for (gpu, kind), fault in worst_per_gpu(reading.faults).items():
            key = (node.instance_id, gpu, kind)
            event = open_events.get(key)
            worse = fault.severity == "critical" and event is not None and event.severity != "critical"
            if event is not None and event.code == fault.code and not worse:
                still.add(key)
                continue  # the same condition, read again (a critical one that eases stays critical until normal)
            if worse:
                escalated.add(key)  # a warning turned critical (a GPU from slowdown to near shutdown): a new event
            new.append(_event(cluster, node, fault, kind, source, now))
        if not reading.counters_judged:  # no window to judge throttling in: those events stand (a temperature's not)
            still.update(key for key, e in open_events.items() if key[0] == node.instance_id and key[2] in
                         COUNTER_KINDS and not temperature.is_temperature(e.message))  # fmt: skip
        for gpu, kinds in reading.unsupported.items():  # a blank says nothing: what was open stays open
            still.update(key for key in open_events if key[0] == node.instance_id and (key[1], key[2]) in
                         {(gpu, kind) for kind in kinds})  # fmt: skip
    catalog = gpu_catalog() if silent else {}
    for node in silent:
        still.update(key for key in open_events if key[0] == node.instance_id)
        key = (node.instance_id, None, Kind.EXPORTER_SILENT)
        if key not in open_events:
            if neuron.expected_counts(node.instance_type, catalog) is not None:
                said = _("The Neuron monitor on %(node)s sent nothing while the cluster's other nodes did.")
            else:
                said = _("The GPU exporter on %(node)s sent nothing while the cluster's other nodes did.")
            message = said % {"node": node.hostname or node.instance_id}
            new.append(
                HealthEvent(organization=org, cluster=cluster, node=node, instance_id=node.instance_id,
                            group_name=node.group_name, kind=Kind.EXPORTER_SILENT,
                            severity=HealthEvent.Severity.WARNING, source=source, message=message, observed_at=now)
            )  # fmt: skip
    still -= escalated  # whatever else kept it: the critical event takes its place
    for key, event in open_events.items():
        if key not in still:
            event.resolved_at = now  # normal again, or a new Xid replaced the one it held
            resolved.append(event)
    for node, reading in readings.items():
        unsupported = {str(gpu): kinds for gpu, kinds in sorted(reading.unsupported.items())}
        if node.gpu_unsupported != unsupported:  # usually unchanged from the last read: no write
            node.gpu_unsupported = unsupported
            ClusterNode.objects.filter(pk=node.pk).update(gpu_unsupported=unsupported)
    busy = {node: reading.utilization for node, reading in readings.items() if reading.utilization is not None}
    if busy:  # before gpu_read_at moves: each reading stands for the time since the node's previous one
        accelerators = {name: count for name, (_accelerator, count, _ranks) in gpu_catalog().items()}
        record_utilization(cluster, busy, accelerators=accelerators, now=now)
    ClusterNode.objects.filter(pk__in=[node.pk for node in readings]).update(gpu_read_at=now)
    for node, utilization in busy.items():
        ClusterNode.objects.filter(pk=node.pk).update(accelerator_utilization=utilization)
    HealthEvent.objects.bulk_update(resolved, ["resolved_at"])  # first: the new may take their place
    HealthEvent.objects.bulk_create(new)
    report_health(cluster, opened=new, cleared=[e for e in resolved if e.kind != Kind.EXPORTER_SILENT])
    return Outcome(
        readings=sum(len(r.faults) for r in readings.values()),
        opened=len(new),
        resolved=len(resolved),
        nodes=len(readings),
    )


def _event(cluster, node, reading: GpuReading, kind, source, now) -> HealthEvent:
    return HealthEvent(
        organization=cluster.organization,
        cluster=cluster,
        node=node,
        instance_id=node.instance_id,
        group_name=node.group_name,
        gpu=reading.gpu,
        kind=kind,
        code=reading.code,
        severity=HealthEvent.Severity(reading.severity.value),
        action=reading.action.value,
        source=source,
        message=reading.message,
        observed_at=now,
    )


@transaction.atomic
def ingest_exporter_text(*, cluster: Cluster, text: str, host: str = "", now: datetime | None = None) -> Outcome:
    """One node's dcgm-exporter or Neuron exporter scrape, or one neuron-monitor JSON report, posted by the
    cluster. The node is named by the samples (their instance id or Hostname label) or by `host` (the Slurm node it
    was scraped from); a node the portal does not know is a 400. Throttling is judged against the previous scrape
    posted for the node, at least MIN_WINDOW earlier."""
    now = now or timezone.now()
    report = neuron.is_report(text)
    with field_errors("metrics"):
        # neuron-monitor's own JSON report is read into the exporter's series.
        pairs = neuron.report_pairs(text) if report else sample_pairs(parse_exposition(text).samples)
        if neuron.is_neuron(pairs):  # the Neuron exporter's own process series name no node: only its rules' count
            pairs = [(labels, value) for labels, value in pairs if labels.get("__name__") in neuron.FAMILIES]
        names = {host_of(labels, host or None) for labels, _value in pairs}
    if report and not pairs:
        raise ValidationError(
            {"metrics": _("The neuron-monitor report holds no Neuron readings: enable its neuron_hw_counters group.")}
        )
    if not pairs:  # nothing read is not "all normal": an empty or cut body must clear no condition
        raise ValidationError({"metrics": _("The exporter text has no samples: post a whole /metrics scrape.")})
    index = HostIndex(ClusterNode.objects.for_org(cluster.organization).filter(cluster=cluster),
                      {cluster.pk: cluster.slurm_nodes or {}})  # fmt: skip
    nodes = {name: index.live(cluster.pk, name) for name in names | ({host} if host else set())}
    unknown = sorted(name for name, node in nodes.items() if node is None)
    if unknown:
        raise ValidationError(
            {"host": _("No node of this cluster is called %(names)s.") % {"names": ", ".join(unknown)}}
        )
    by_node: dict[ClusterNode, list[Pair]] = defaultdict(list)
    for labels, value in pairs:
        by_node[nodes[host_of(labels, host or None)]].append((labels, value))
    if report:  # the report says which instance type wrote it: a different node's is not this one's
        for node, node_pairs in by_node.items():
            said = node_pairs[0][0].get("instance_type")
            if said and said != node.instance_type:
                raise ValidationError(
                    {"metrics": _("The report comes from a %(said)s; %(node)s is a %(type)s.")
                     % {"said": said[:40], "node": node.hostname or node.instance_id, "type": node.instance_type}}
                )  # fmt: skip
    catalog = gpu_catalog()
    readings = {}
    for node, node_pairs in by_node.items():
        previous, window = _previous_counters(node, now)
        with field_errors("metrics"):  # a rule's series without its gpu label, an Xid that is not a whole number
            readings[node] = classify_node(node, node_pairs, catalog=catalog, previous=previous, window_seconds=window)
        if readings[node].counters_judged or previous is None:
            _keep_counters(node, node_pairs, now)  # a snapshot too soon after the last (a retry) keeps the older one
    return apply_readings(cluster, readings, source=HealthEvent.Source.PUSH, now=now)


def _previous_counters(node: ClusterNode, now: datetime) -> tuple[list[Pair] | None, float | None]:
    saved = node.gpu_counters or {}
    if not saved.get("pairs") or not saved.get("at"):
        return None, None
    window = now.timestamp() - float(saved["at"])
    if window <= 0:
        return None, None
    return [(labels, value) for labels, value in saved["pairs"]], window


def _keep_counters(node: ClusterNode, pairs: list[Pair], now: datetime) -> None:
    counters = [
        [dict(labels), value]
        for labels, value in pairs
        if labels.get("__name__") in COUNTER_METRICS and math.isfinite(value) and not is_blank(value)
    ]
    node.gpu_counters = {"at": now.timestamp(), "pairs": counters} if counters else {}
    ClusterNode.objects.filter(pk=node.pk).update(gpu_counters=node.gpu_counters)
