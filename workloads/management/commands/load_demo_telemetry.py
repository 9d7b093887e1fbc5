"""The demo organizations' clusters live in the local emulator, each with as many nodes as its story says run now
(`load_demo_usage` made them, with their history), so the poller carries every organization's usage on while
`make run` runs. The two demo tenants' clusters also look as their reporter would make them look: host names, jobs
running and finished (sacct), an nccl-tests run, and GPU readings — one GPU fallen off the bus in the first
organization (an incident and its support case), an interconnect under its baseline in the second. The Trainium
clusters post their Neuron monitor readings (each node's 16 devices and 32 NeuronCores busy; corrected ECC errors on
one device of the second node, a warning), so their boards are read, not grey. Idempotent; `make run` calls it once
the emulator is up.

The emulator replays its recording at start, so the clusters of an earlier run are still there; one it no longer
knows is marked deleted (its history stays) and a new one of the same size is made. Nothing reports afterwards, so
after three report intervals a reporter shows as silent and its running job as "state unknown" — as it would on a
real cluster.
"""

from __future__ import annotations

import math
from datetime import UTC, timedelta

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from portal import cloud
from tenants.models import Organization
from workloads.clusters.lifecycle import transition
from workloads.clusters.models import Cluster, ClusterNode
from workloads.clusters.provisioning import provider_for, provision
from workloads.clusters.sync import close_nodes
from workloads.health.neuron import expected_counts
from workloads.health.telemetry import gpu_catalog, ingest_exporter_text
from workloads.jobs.sacct import SACCT_FIELDS
from workloads.jobs.services import ingest_sacct
from workloads.management.commands.load_demo_usage import story_cluster, story_cluster_name
from workloads.validation.services import record_validation

DEMO_TENANTS = ("tenant1", "tenant2")
STORY_NAMES = [story_cluster_name(api_name) for api_name in ("p5.48xlarge", "trn1.32xlarge")]
PEAKS = (486.0, 352.0)  # the first tenant's interconnect is healthy, the second's under its 487 GB/s baseline


class Command(BaseCommand):
    help = (
        "Bring every demo organization's cluster up in the local emulator; jobs, GPU and Neuron readings, an nccl run."
    )

    def handle(self, *args, **options) -> None:
        if settings.PRODUCTION:
            raise CommandError("Refusing to load demo telemetry with PORTAL_PRODUCTION=True.")
        if not settings.AWS_ENDPOINT_URL:
            raise CommandError("The demo clusters live in the local emulator: set AWS_ENDPOINT_URL to it first.")
        reporting = {}
        for index, username in enumerate(DEMO_TENANTS):
            org = Organization.objects.filter(memberships__user__username=username).order_by("pk").first()
            if org is not None:
                reporting[org.pk] = index
        clusters = (
            Cluster.objects.filter(name__in=STORY_NAMES, organization__aws_account_id__gt="")
            .exclude(status__in=(Cluster.Status.DELETED, Cluster.Status.FAILED))
            .select_related("organization", "allocation__pool__instance_type")
            .order_by("organization_id", "pk")
        )
        if not clusters:
            raise CommandError("No demo clusters: run manage.py load_demo_usage first (on a fresh var/).")
        for cluster in clusters:
            self.stdout.write(self.bring_up(cluster, reporting.get(cluster.organization_id)))

    def bring_up(self, cluster: Cluster, index: int | None) -> str:
        org = cluster.organization
        if cluster.status in (Cluster.Status.IN_SERVICE, Cluster.Status.DEGRADED):
            if self.alive(cluster):
                return f"{org.name}: {cluster.name} (cluster {cluster.pk}) is running."
            self.retire(cluster)
            cluster = story_cluster(cluster.allocation)
        if provision(cluster.pk) != "created":
            return f"{org.name}: the emulator did not create {cluster.name}; see its page."
        if index is not None:
            self.report(cluster, index)
        if expected_counts(cluster.allocation.pool.instance_type.api_name, gpu_catalog()) is not None:
            self.report_neuron(cluster)
        workers = ClusterNode.objects.for_org(org).filter(
            cluster=cluster, gone_at=None, instance_type=cluster.allocation.pool.instance_type.api_name
        )
        return f"{org.name}: {cluster.name} (cluster {cluster.pk}) in the emulator with {workers.count()} workers."

    def alive(self, cluster: Cluster) -> bool:
        try:
            return provider_for(cluster).describe(cluster.cloud_name).status != cloud.CloudStatus.NOT_FOUND
        except cloud.CloudError:
            return False

    def retire(self, cluster: Cluster) -> None:
        message = "Demo: the emulator restarted empty; a new cluster of the same size replaces this one."
        transition(cluster_id=cluster.pk, to=Cluster.Status.DELETING, message=message)
        if transition(cluster_id=cluster.pk, to=Cluster.Status.DELETED, message=message):
            close_nodes(cluster, timezone.now())

    def report(self, cluster: Cluster, index: int) -> None:
        """What the head node's reporter would post: the node map, sacct, an nccl-tests log, each node's GPUs."""
        workers = ClusterNode.objects.for_org(cluster.organization).filter(
            cluster=cluster, instance_type="p5.48xlarge", gone_at=None
        )
        nodes = list(workers.order_by("pk"))
        if len(nodes) < 3:
            return
        hosts = [f"ip-10-{cluster.organization_id % 250}-0-{n + 1}" for n in range(len(nodes))]
        for node, host in zip(nodes, hosts, strict=True):
            ClusterNode.objects.filter(pk=node.pk).update(hostname=host)
        cluster.refresh_from_db()
        ingest_sacct(cluster=cluster, text=sacct(hosts), timezone_name="UTC", interval_seconds=300)
        record_validation(cluster=cluster, log=nccl_log(PEAKS[index % len(PEAKS)], len(hosts)), nodes=len(hosts))
        for number, host in enumerate(hosts):
            fallen = index == 0 and number == 1  # tenant1's second node: GPU 3 has fallen off the bus
            ingest_exporter_text(cluster=cluster, text=exporter_text(host, {3: 79} if fallen else {}), host=host)

    def report_neuron(self, cluster: Cluster) -> None:
        """What each Trainium node's Neuron monitor exporter would post, as the P5 nodes post DCGM's."""
        api_name = cluster.allocation.pool.instance_type.api_name
        workers = ClusterNode.objects.for_org(cluster.organization).filter(
            cluster=cluster, instance_type=api_name, gone_at=None
        )
        for number, node in enumerate(workers.order_by("pk")):
            corrected = {5: 2} if number == 1 else {}  # the second node: 2 corrected ECC errors on device 5
            busy = 0.92 - 0.04 * (number % 3)
            text = neuron_exporter_text(node.instance_id, api_name, busy=busy, corrected=corrected)
            ingest_exporter_text(cluster=cluster, text=text)


def neuron_exporter_text(instance_id: str, api_name: str, *, busy: float, corrected: dict[int, int]) -> str:
    """neuron-monitor-prometheus.py's series for one trn1 node (as in tests/samples): ECC counters for its 16
    devices, the driver's device and core counts, each of its 32 NeuronCores at about `busy`."""
    labels = f'instance_id="{instance_id}",instance_type="{api_name}"'
    lines = ["# TYPE hardware_ecc_events_total counter"]
    for device in range(16):
        for event in ("mem_ecc_corrected", "mem_ecc_uncorrected", "sram_ecc_corrected", "sram_ecc_uncorrected"):
            value = corrected.get(device, 0) if event == "mem_ecc_corrected" else 0
            lines.append(f'hardware_ecc_events_total{{event_type="{event}",{labels},neuron_device_index="{device}"}} '
                         f"{float(value)}")  # fmt: skip
    lines += ["# TYPE neuron_hardware_info gauge",
              f'neuron_hardware_info{{{labels},neuron_device_count="16",neuroncore_per_device_count="2"}} 1.0',
              "# TYPE neuroncore_utilization_ratio gauge"]  # fmt: skip
    lines += [f'neuroncore_utilization_ratio{{{labels},neuroncore="{core}"}} {busy - 0.01 * (core % 4):.2f}'
              for core in range(32)]  # fmt: skip
    return "\n".join(lines) + "\n"


def sacct(hosts: list[str]) -> str:
    now = timezone.now().astimezone(UTC).replace(microsecond=0)

    def at(delta: timedelta) -> str:
        return (now - delta).strftime("%Y-%m-%dT%H:%M:%S")

    whole = f"{hosts[0][:-1]}[1-{len(hosts)}]"
    gpus = 8 * len(hosts)
    rows = [
        ("101", "pretrain-13b", "aiko", "RUNNING", at(timedelta(minutes=2)), at(timedelta(minutes=1)), "Unknown", 60,
         len(hosts), whole, f"cpu={192 * len(hosts)},gres/gpu:h100={gpus},gres/gpu={gpus},node={len(hosts)}"),
        ("99", "nccl-allreduce", "kenji", "COMPLETED", at(timedelta(minutes=30)), at(timedelta(minutes=29)),
         at(timedelta(minutes=25)), 240, 2, f"{hosts[0]},{hosts[1]}", "gres/gpu=16"),
        ("100_1", "sweep-lr", "mei", "CANCELLED by 1002", at(timedelta(minutes=20)), at(timedelta(minutes=19)),
         at(timedelta(minutes=5)), 840, 1, hosts[2], "gres/gpu=8"),
        ("102", "eval-mmlu", "ryo", "PENDING", at(timedelta(minutes=1)), "Unknown", "Unknown", 0, 1, "None assigned",
         ""),
    ]  # fmt: skip
    lines = ["|".join(SACCT_FIELDS)]
    for job_id, name, user, state, submit, start, end, elapsed, nnodes, nodelist, tres in rows:
        fields = [job_id, name, user, "demo", "train", state, submit, start, end, elapsed, nnodes, nodelist, tres]
        lines.append("|".join(map(str, fields)))
    return "\n".join(lines) + "\n"


def nccl_log(peak: float, nodes: int) -> str:
    """An all_reduce_perf table from 1 MiB to 16 GiB whose bus bandwidth rises to `peak` (a demo curve)."""
    lines = [
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
        "#wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)",
    ]
    ranks = 8 * nodes
    for power in range(20, 35):
        size = 2**power
        busbw = peak * (1 - math.exp(-size / 2**29))
        algbw = busbw * ranks / (2 * (ranks - 1))
        time_us = size / (algbw * 1e3)
        lines.append(
            f"{size:12d} {size // 4:13d}     float     sum      -1 {time_us:8.1f} {algbw:7.2f} {busbw:7.2f}      0 "
            f"{time_us:8.1f} {algbw:7.2f} {busbw:7.2f}      0"
        )
    lines += ["# Out of bounds values : 0 OK", f"# Avg bus bandwidth    : {peak * 0.55:.4f}", "#"]
    return "\n".join(lines) + "\n"


def exporter_text(host: str, xids: dict[int, int]) -> str:
    lines = [
        "# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.",
        "# TYPE DCGM_FI_DEV_XID_ERRORS gauge",
    ]
    lines += [f'DCGM_FI_DEV_XID_ERRORS{{gpu="{gpu}",Hostname="{host}"}} {xids.get(gpu, 0)}' for gpu in range(8)]
    return "\n".join(lines) + "\n"
