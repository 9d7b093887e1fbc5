"""Busy accelerator-time: the accelerators scheduler jobs held, counted per node and hour and never more than the
node ran in that hour (its run intervals × its accelerators). The usage rollup calls it for the days it rebuilds.

- A job counts from Start to End; while it holds its nodes, up to the last report that listed it (never "now"), or
  the going of a node of it the cloud no longer lists, if earlier; and never past what each node ran (below).
- Its accelerators are shared out over the nodes of its NodeList (an even split; the remainder to the first ones).
- A Slurm node name means a cloud node through the host key (workloads.clusters.hosts): HyperPod names nodes by
  host name, ParallelCluster through the reporter's node map. A name the portal cannot place counts nothing, since
  no running time is known for it. Where a private address came back on a replacement node, each hour goes to
  the node that ran in it.
- Hours are the program time zone's hours, so they nest in program days.
- On a cluster that never reported a job, the nodes' own utilization readings (Trainium's NeuronCores, kept per node
  and hour by workloads.usage.utilization) are the busy time, capped the same way.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from django.db.models import Min, Q
from django.utils import timezone

from tenants.models import InstanceType
from workloads.clusters.hosts import HostIndex, host_key
from workloads.clusters.models import Cluster, ClusterNode
from workloads.jobs.models import Job
from workloads.jobs.sacct import HOLDING_STATES, job_hosts
from workloads.usage.definitions import overlap
from workloads.usage.utilization import utilization_demand

HOUR = timedelta(hours=1)


@dataclass(frozen=True)
class NodeRun:
    """Part of a node's run interval inside the rollup's window, in a pool (as the rollup found it)."""

    organization_id: int
    cluster_id: int | None
    node_id: int | None
    pool_id: int
    instance_type: str
    start: datetime
    end: datetime


@dataclass
class BusyTime:
    by_pool: dict[tuple[int, int, date], int]  # (organization, pool, day) → accelerator-µs
    by_cluster: dict[tuple[int, int | None, int, date], int]  # (organization, cluster, pool, day) → accelerator-µs
    reporting_since: dict[int, date]  # organization → the first day its reports cover

    def figure(self, parts: dict, key: tuple) -> int | None:
        """The busy time of `key` (organization first, day last) in `parts`: a figure, 0 included, from the first
        day the organization's reports cover; None ("not reported") before."""
        since = self.reporting_since.get(key[0])
        return parts.get(key, 0) if since is not None and key[-1] >= since else None


def hours(start: datetime, end: datetime):
    """(hour start, µs of [start, end) in that hour) for each hour of the program's time zone the span touches:
    local hours nest in program days, whatever the zone's offset."""
    hour = timezone.localtime(start).replace(minute=0, second=0, microsecond=0).astimezone(UTC)
    while hour < end:
        following = hour + HOUR  # in UTC: a local hour is an hour, across daylight-saving changes too
        if part := overlap(start, end, hour, following):
            yield hour, part
        hour = following


def busy_time(organization_ids: list[int], window: tuple[datetime, datetime], runs: list[NodeRun]) -> BusyTime:
    firsts = (
        Job.objects.filter(organization_id__in=organization_ids)
        .values("organization_id")
        .annotate(reported=Min("first_reported_at"), started=Min("started_at"))
        .values_list("organization_id", "reported", "started")
    )
    # From the first day a report covered: its first report's day, or the start of the earliest job it named.
    reporting = {org: timezone.localdate(min(filter(None, (reported, started)))) for org, reported, started in firsts}
    # Where no job was ever reported, the nodes' own utilization readings (workloads.usage.utilization).
    read, read_since = utilization_demand(organization_ids, window)
    for org, hour in read_since.items():
        reporting[org] = min(reporting.get(org, timezone.localdate(hour)), timezone.localdate(hour))
    result = BusyTime(by_pool=defaultdict(int), by_cluster=defaultdict(int), reporting_since=reporting)
    if not reporting:
        return result
    demand = _demand(organization_ids, window) if firsts else {}
    canonical = _canonical_keys({cluster for cluster, _key, _hour in demand} | {cluster for cluster, _n, _h in read})
    for (_cluster, node_id, hour), busy in read.items():
        if (key := canonical.get(node_id)) is not None:
            demand[(*key, hour)] = demand.get((*key, hour), 0) + busy
    if not demand:
        return result
    per_instance = dict(InstanceType.objects.values_list("api_name", "accelerators_per_instance"))
    # Each node's running time in the hours jobs wanted it, as accelerator-µs it could have been busy.
    supply: dict[tuple, list[tuple[NodeRun, int]]] = defaultdict(list)
    for run in runs:
        key = canonical.get(run.node_id)
        if key is None:
            continue
        for hour, part in hours(run.start, run.end):
            if (*key, hour) in demand:
                supply[(*key, hour)].append((run, part * per_instance.get(run.instance_type, 0)))
    for slot, wanted in demand.items():
        for run, capacity in supply.get(slot, ()):
            if wanted <= 0:
                break
            given = min(wanted, capacity)
            day = timezone.localdate(slot[2])
            result.by_pool[(run.organization_id, run.pool_id, day)] += given
            result.by_cluster[(run.organization_id, run.cluster_id, run.pool_id, day)] += given
            wanted -= given
    return result


def _demand(organization_ids: list[int], window: tuple[datetime, datetime]) -> dict[tuple[int, str, datetime], int]:
    """(cluster, host key, hour) → accelerator-µs the jobs held there inside the window."""
    jobs = list(
        Job.objects.filter(
            organization_id__in=organization_ids, started_at__lt=window[1], accelerators__gt=0, node_count__gt=0
        )
        .filter(Q(ended_at__gt=window[0]) | Q(ended_at=None))
        .exclude(node_list="")
        .values_list(
            "cluster_id",
            "state",
            "started_at",
            "ended_at",
            "last_reported_at",
            "state_unknown_since",
            "elapsed_seconds",
            "node_list",
            "hosts",
            "accelerators",
        )
    )
    if not jobs:
        return {}
    clusters = {job[0] for job in jobs}
    index = HostIndex(
        ClusterNode.objects.filter(cluster_id__in=clusters).only(
            "cluster_id", "instance_id", "hostname", "gone_at", "first_seen_at"
        ),  # fmt: skip
        dict(Cluster.objects.filter(pk__in=clusters).values_list("pk", "slurm_nodes")),
    )
    demand: dict[tuple[int, str, datetime], int] = defaultdict(int)
    for cluster_id, state, started, ended, reported, unknown, elapsed, node_list, hosts, accelerators in jobs:
        if ended is not None:
            until = ended
        elif state in HOLDING_STATES:
            until = min(filter(None, (reported, unknown)))  # as Job.counted_until: a gone node's going stops it
        else:
            until = started + timedelta(seconds=elapsed)
        start, end = max(started, window[0]), min(until, window[1])
        if end <= start:
            continue
        names = job_hosts(node_list, hosts)
        share, extra = divmod(accelerators, len(names))
        for position, name in enumerate(names):
            nodes = index.nodes(cluster_id, name, mapped=not hosts)
            if not nodes:
                continue  # a host the portal does not know ran nothing it can count
            key = _canonical(nodes[-1])
            for hour, part in hours(start, end):
                demand[(cluster_id, key, hour)] += part * (share + (position < extra))
    return demand


def _canonical(node: ClusterNode) -> str:
    """One key per host, whichever name a job used: the host name when the cloud gave one, else the instance id."""
    return host_key(node.hostname) or host_key(node.instance_id)


def _canonical_keys(clusters: set[int]) -> dict[int, tuple[int, str]]:
    nodes = ClusterNode.objects.filter(cluster_id__in=clusters).only("cluster_id", "instance_id", "hostname")
    return {node.pk: (node.cluster_id, _canonical(node)) for node in nodes}
