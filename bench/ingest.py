"""What clusters report, at program scale.

- Jobs: one request posting 10,000 sacct rows to /api/v1/clusters/{id}/jobs/ingest/ with the cluster's reporter
  token (parse, one transaction, upsert), next to a bare bulk insert of the same rows (the goal: within 3×); then
  the same 10,000 posted again (all known: no new rows). Paired: each of ROUNDS rounds times the post and the bare
  insert one after the other (in turn which goes first), and the figure is the median of the rounds' ratios, so
  that both sides of a ratio saw the same machine; an untimed post goes first (a process's first request loads
  the URLconf and the modules behind it: some 2 s, once). Then the same again with BENCH_LOAD_PROCESSES
  processes spinning on the CPU beside it (default: one per core; 0 to skip), the goal holding under load too.
- GPU health: one Prometheus poll over 150 nodes × 8 GPUs (every DCGM family the rules read, as the exporter
  sends them) against a real Prometheus built by promtool, when Debian's `prometheus` package is installed:
  its time, its HTTP queries and its SQL queries; a second poll with nothing changed. And the exporter text those
  150 nodes would post (each node's scrape: the rules' families and the common gauges, with dcgm-exporter's
  labels) read by `parse_exposition` and classified, without the database.
- Trainium health: 24 trn1.32xlarge nodes × 16 Neuron devices, each node posting its Neuron monitor exporter text
  (the real trn1n scrape of tests/samples, with ECC counters for 16 devices and utilization for 32 NeuronCores) to
  /api/v1/clusters/{id}/health/ingest/ with the reporter token: the 24 posts' time and SQL queries, then again; then
  the same readings as neuron-monitor's own JSON report (the real trn1 report of tests/samples, widened to 16 devices).

Times are medians of REPEAT runs (this machine's timings vary by tens of percent from run to run). BENCH_TINY=1:
200 rows, 20 nodes, 2 Trainium nodes, one run each, no Prometheus, no load processes.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench._django import measured, setup
from bench._report import TINY, record, tiny

ROWS = tiny(10_000, 200)
NODES = tiny(150, 20)
GPUS = 8
TRN_NODES = tiny(24, 2)
NEURON_DEVICES = 16
REPEAT = tiny(3, 1)
ROUNDS = tiny(7, 1)
LOAD_PROCESSES = tiny(int(os.environ.get("BENCH_LOAD_PROCESSES", os.cpu_count() or 1)), 0)


def sacct_report(hosts: list[str]) -> str:
    from workloads.jobs.sacct import SACCT_FIELDS

    # In the past, as a real report is (times past now are refused): ROWS × 7 minutes before today.
    start = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(minutes=7 * ROWS + 1440)
    lines = ["|".join(SACCT_FIELDS)]
    for n in range(ROWS):
        begin = start + timedelta(minutes=7 * n)
        nodes = 1 + n % 8
        first = n % (len(hosts) - nodes)
        job_id = f"{5000 + n // 4}_{n % 4}" if n % 10 == 0 else str(5000 + n)
        state, end = ("RUNNING", "Unknown") if n % 50 == 0 else ("COMPLETED", (begin + timedelta(hours=2)).strftime(
            "%Y-%m-%dT%H:%M:%S"))  # fmt: skip
        tres = f"billing={96 * nodes},cpu={96 * nodes},gres/gpu:h100={8 * nodes},gres/gpu={8 * nodes},node={nodes}"
        lines.append(
            "|".join(
                [
                    job_id,
                    f"pretrain-{n % 17}",
                    f"user{n % 23}",
                    "lab",
                    "p5",
                    state,
                    begin.strftime("%Y-%m-%dT%H:%M:%S"),
                    begin.strftime("%Y-%m-%dT%H:%M:%S"),
                    end,
                    "7200",
                    str(nodes),
                    ",".join(hosts[first : first + nodes]),
                    tres,
                ]
            )  # fmt: skip
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    setup()
    import logging

    logging.disable(logging.WARNING)
    from django.test import Client

    from tests.factories import ClusterFactory, ClusterNodeFactory, MembershipFactory, OrganizationFactory
    from workloads.reporting.services import issue_token

    org = OrganizationFactory(slug="bench-ingest")
    cluster = ClusterFactory(organization=org, name="bench-p5")
    nodes = [ClusterNodeFactory(cluster=cluster, hostname=f"ip-10-9-{n // 250}-{n % 250 + 1}") for n in range(NODES)]
    hosts = [node.hostname for node in nodes]
    member = MembershipFactory(organization=org).user
    _token, key = issue_token(user=member, cluster=cluster, name="bench")
    client = Client(HTTP_AUTHORIZATION=f"Token {key}")
    body = sacct_report(hosts)
    url = f"/api/v1/clusters/{cluster.pk}/jobs/ingest/"
    print(f"jobs: {ROWS:,} sacct rows ({len(body) / 2**20:.1f} MB) in one request, {NODES} nodes")

    client.post(url, body, content_type="text/plain")  # the process's first request: not the ingest's cost
    for label, processes in (("without added load", 0), ("under load", LOAD_PROCESSES)):
        if processes or not label.startswith("under"):
            sacct_rounds(label, processes, client=client, url=url, body=body, cluster=cluster)
    gpu_health(cluster, nodes)
    neuron_health(org, member)


def sacct_rounds(label: str, processes: int, *, client, url: str, body: str, cluster) -> None:
    """ROUNDS paired rounds of the post and the bare insert of the same rows, `processes` spinning beside them."""
    from workloads.jobs.models import Job
    from workloads.jobs.sacct import parse_sacct
    from workloads.jobs.services import _columns, accelerators_per_node

    parsed = parse_sacct(body, tz=UTC, accelerators_per_node=accelerators_per_node(cluster))

    def post() -> dict:
        Job.objects.all().delete()
        with measured() as m:
            response = client.post(url, body, content_type="text/plain")
        assert response.status_code == 200 and response.json()["created"] == ROWS, response.content[:300]
        return m

    def bare() -> dict:
        # The same rows, already parsed, straight into the table.
        Job.objects.all().delete()
        now = datetime.now(UTC)
        rows = [Job(organization=cluster.organization, cluster=cluster, job_id=job.job_id, first_reported_at=now,
                    last_reported_at=now, **_columns(job, {})) for job in parsed]  # fmt: skip
        with measured() as m:
            Job.objects.bulk_create(rows, batch_size=1_000)
        return m

    load = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(processes)]
    rounds, again = [], []
    try:
        for number in range(ROUNDS):
            if number % 2:
                b, p = bare(), post()
            else:
                p, b = post(), bare()
            rounds.append((p, b))
            with measured() as m:
                response = client.post(url, body, content_type="text/plain")  # all known now
            assert response.json() == {"received": ROWS, "created": 0, "updated": 0, "unchanged": ROWS}
            again.append(m)
    finally:
        for process in load:
            process.kill()
            process.wait()
    ratios = [p["ms"] / b["ms"] for p, b in rounds]
    ratio = statistics.median(ratios)
    posted = statistics.median(p["ms"] for p, _b in rounds)
    beside = f", {processes} processes spinning beside it" if processes else ""
    print(f"  {label}{beside}: {ROUNDS} paired rounds")
    print(f"    post {ROWS:,} new        {posted:8.0f} ms  {rounds[-1][0]['queries']:4d} queries")
    print(f"    bare bulk insert       {statistics.median(b['ms'] for _p, b in rounds):8.0f} ms  "
          f"{rounds[-1][1]['queries']:4d} queries")  # fmt: skip
    print(f"    ratio post / bare      {ratio:8.2f}×  (rounds {min(ratios):.2f}–{max(ratios):.2f}×; goal: within 3×)")
    print(f"    re-post, all known     {statistics.median(m['ms'] for m in again):8.0f} ms  "
          f"{again[-1]['queries']:4d} queries  (0 new rows)")  # fmt: skip
    name = f"post {ROWS:,} sacct rows ÷ bare bulk insert, {label}"
    if processes:
        name += f" ({processes} CPU-bound processes beside it)"
    record("ingest", f"{name} (rounds {min(ratios):.2f}–{max(ratios):.2f}×)", ratio, "×", "≤ 3×", ratio <= 3)
    record("ingest", f"post {ROWS:,} sacct rows, {label}", posted, "ms", "", None)
    record("ingest", f"re-post {ROWS:,} known rows, {label}", statistics.median(m["ms"] for m in again), "ms", "",
           None)  # fmt: skip


def exporter_scrape(host: str) -> str:
    """One node's dcgm-exporter /metrics: 8 GPUs, every family the rules read and the usual gauges beside them."""
    from workloads.health.dcgm import METRIC_RULES, XID_METRIC

    families = [(XID_METRIC, "gauge", 0)]
    families += [(rule.metric, "counter" if rule.min_fraction else "gauge", 0) for rule in METRIC_RULES if rule.metric]
    families += [("DCGM_FI_DEV_GPU_TEMP", "gauge", 41), ("DCGM_FI_DEV_POWER_USAGE", "gauge", 412.5),
                 ("DCGM_FI_DEV_SM_CLOCK", "gauge", 1980), ("DCGM_FI_DEV_GPU_UTIL", "gauge", 97)]  # fmt: skip
    lines = []
    for name, kind, value in families:
        lines += [f"# HELP {name} {name}.", f"# TYPE {name} {kind}"]
        for gpu in range(GPUS):
            lines.append(
                f'{name}{{gpu="{gpu}",UUID="GPU-{gpu:08d}-24b2-4dcd-853c-b19000000000",pci_bus_id="00000000:{gpu:02d}:00.0",'
                f'device="nvidia{gpu}",modelName="NVIDIA H100 80GB HBM3",Hostname="{host}",'
                f'DCGM_FI_DRIVER_VERSION="580.95.05"}} {value}'
            )
    return "\n".join(lines) + "\n"


def exporter_text() -> None:
    from workloads.health.dcgm import classify, parse_exposition, sample_pairs

    scrapes = [exporter_scrape(f"ip-10-9-0-{n}") for n in range(NODES)]
    runs = []
    for _ in range(REPEAT):
        started = time.perf_counter()
        for text in scrapes:
            classify(sample_pairs(parse_exposition(text).samples), expected_gpus=GPUS)
        runs.append((time.perf_counter() - started) * 1000)
    lines = sum(text.count("\n") for text in scrapes)
    print(f"\nGPU health: exporter text of {NODES} nodes × {GPUS} GPUs ({lines:,} lines), parsed and classified")
    median = statistics.median(runs)
    print(f"  all {NODES} scrapes        {median:8.0f} ms  ({median / NODES:.2f} ms a scrape)")
    record("ingest", f"DCGM exporter text, parsed and classified ({GPUS} GPUs)", median / NODES, "ms a node", "", None)


def gpu_health(cluster, nodes) -> None:
    exporter_text()
    print(f"\nGPU health: one Prometheus poll over {NODES} nodes × {GPUS} GPUs")
    missing = [tool for tool in ("promtool", "prometheus") if not shutil.which(tool)]
    if TINY:
        print("  skipped: tiny run (BENCH_TINY)")
        return
    if missing:
        print(f"  skipped: {' and '.join(missing)} not on PATH (apt-get install prometheus)")
        return
    from tests.health.prometheus_server import PrometheusFactory
    from workloads.health import polling
    from workloads.health.dcgm import METRIC_RULES, XID_METRIC
    from workloads.health.models import HealthEvent, PrometheusSource

    at = datetime.now(UTC).replace(microsecond=0) - timedelta(days=1)
    samples = [(at - timedelta(minutes=m), 0) for m in (0, 5, 10)]
    series = []
    for number, node in enumerate(nodes):
        for gpu in range(GPUS):
            labels = {"Hostname": node.hostname, "gpu": str(gpu), "instance": f"{node.hostname}:9400"}
            xid = 79 if (number, gpu) in ((7, 3), (90, 1)) else 0
            series.append((XID_METRIC, labels, [(t, xid) for t, _v in samples]))
            for rule in METRIC_RULES:
                if rule.metric:
                    kind = "counter" if rule.min_fraction is not None else "gauge"
                    series.append((rule.metric, labels, samples, kind))
    factory = PrometheusFactory(Path(tempfile.mkdtemp(prefix="bench-prometheus-")))
    server = factory(series)
    try:
        source = PrometheusSource.objects.create(name="bench", url=server.url)
        http = {"count": 0}

        def counted_query(*args, **kwargs):
            http["count"] += 1
            from portal.cloud.prometheus import query

            return query(*args, **kwargs)

        runs = []
        for label in ("first poll", "same readings again"):
            with measured() as m:
                started = time.perf_counter()
                outcome = polling.poll_source(source, now=at, query=counted_query)
                m["wall"] = (time.perf_counter() - started) * 1000
            runs.append((label, m, outcome))
        open_events = HealthEvent.objects.filter(cluster=cluster, resolved_at=None).count()
        print(f"  {len(series):,} series")
        for label, m, outcome in runs:
            print(f"  {label:22s} {m['ms']:8.0f} ms  {m['queries']:4d} SQL queries  "
                  f"opened {outcome.opened}, resolved {outcome.resolved}")  # fmt: skip
        print(f"  HTTP queries per poll  {http['count'] // len(runs):8d}  (whatever the number of nodes)")
        print(f"  open events afterwards {open_events:8d}  (two Xid 79)")
        record("ingest", f"Prometheus poll, {NODES} nodes × {GPUS} GPUs", runs[0][1]["ms"], "ms", "", None)
        record("ingest", "Prometheus poll: HTTP queries", http["count"] // len(runs), "",
               "constant, whatever the nodes", None)  # fmt: skip
        record("ingest", "Prometheus poll: open events (two Xid 79 planted)", open_events, "", "2", open_events == 2)
    finally:
        factory.stop_all()


def neuron_text(instance_id: str, *, uncorrected_on: int | None) -> str:
    """One trn1 node's exporter text: the real scrape's series relabelled for this node, ECC counters for its 16
    devices (one uncorrected SRAM error on `uncorrected_on`), utilization for its 32 NeuronCores."""
    sample = (Path(__file__).parent.parent / "tests" / "samples" / "neuron_monitor_prometheus_trn1n.txt").read_text()
    sample = sample.replace("i-09db9b55e0095612f", instance_id).replace("trn1n.32xlarge", "trn1.32xlarge")
    sample = "".join(line for line in sample.splitlines(keepends=True) if "neuroncore_utilization_ratio{" not in line)
    labels = f'instance_id="{instance_id}",instance_type="trn1.32xlarge"'
    lines = ["# TYPE hardware_ecc_events_total counter"]
    for device in range(NEURON_DEVICES):
        for event in ("mem_ecc_corrected", "mem_ecc_uncorrected", "sram_ecc_corrected", "sram_ecc_uncorrected"):
            value = 1.0 if device == uncorrected_on and event == "sram_ecc_uncorrected" else 0.0
            lines.append(f'hardware_ecc_events_total{{event_type="{event}",{labels},neuron_device_index="{device}"}} '
                         f"{value}")  # fmt: skip
    lines += [f'neuroncore_utilization_ratio{{{labels},neuroncore="{core}"}} 0.{core % 10}' for core in range(32)]
    return sample + "\n".join(lines) + "\n"


def neuron_report(instance_id: str, *, uncorrected_on: int | None) -> str:
    """The same node's readings as one neuron-monitor JSON report: the real trn1 report of tests/samples widened to
    a trn1.32xlarge's 16 devices and 32 NeuronCores."""
    import json

    report = json.loads(
        (Path(__file__).parent.parent / "tests" / "samples" / "neuron_monitor_report_trn1.json").read_text()
    )
    report["instance_info"].update(instance_id=instance_id, instance_type="trn1.32xlarge")
    report["neuron_hardware_info"].update(neuron_device_count=NEURON_DEVICES, neuroncore_per_device_count=2)
    report["system_data"]["neuron_hw_counters"]["neuron_devices"] = [
        {"neuron_device_index": device, "mem_ecc_corrected": 0, "mem_ecc_uncorrected": 0, "sram_ecc_corrected": 0,
         "sram_ecc_uncorrected": 1 if device == uncorrected_on else 0}
        for device in range(NEURON_DEVICES)
    ]  # fmt: skip
    counters = report["neuron_runtime_data"][0]["report"]["neuroncore_counters"]
    counters["neuroncores_in_use"] = {str(core): {"neuroncore_utilization": 10.0 * (core % 10)} for core in range(32)}
    return json.dumps(report)


def neuron_health(org, member) -> None:
    from django.test import Client

    from tests.factories import ClusterFactory, ClusterNodeFactory
    from workloads.health.models import HealthEvent
    from workloads.reporting.services import issue_token

    print(f"\nTrainium health: {TRN_NODES} trn1.32xlarge nodes × {NEURON_DEVICES} devices, one post per node")
    cluster = ClusterFactory(organization=org, name="bench-trn1")
    cluster.groups.update(instance_type="trn1.32xlarge")
    nodes = [ClusterNodeFactory(cluster=cluster, instance_type="trn1.32xlarge") for _ in range(TRN_NODES)]
    _token, key = issue_token(user=member, cluster=cluster, name="bench-trn1")
    client = Client(HTTP_AUTHORIZATION=f"Token {key}")
    url = f"/api/v1/clusters/{cluster.pk}/health/ingest/"
    planted = min(5, TRN_NODES - 1)  # the node with one uncorrected SRAM error
    faults = [3 if n == planted else None for n in range(TRN_NODES)]
    bodies = [neuron_text(node.instance_id, uncorrected_on=fault) for node, fault in zip(nodes, faults, strict=True)]
    reports = [neuron_report(node.instance_id, uncorrected_on=fault) for node, fault in zip(nodes, faults, strict=True)]
    print(f"  {sum(b.count(chr(10)) for b in bodies):,} exporter lines, {sum(map(len, bodies)) / 2**20:.1f} MB; "
          f"as neuron-monitor JSON reports {sum(map(len, reports)) / 2**20:.1f} MB")  # fmt: skip
    runs = []
    for label in ("first read", "same readings again", "as JSON reports"):
        if label == "as JSON reports":
            bodies = reports
        repeat = []
        for _ in range(REPEAT if label != "first read" else 1):
            with measured() as m:
                for body in bodies:
                    response = client.post(url, {"metrics": body}, content_type="application/json")
                    assert response.status_code == 200, response.content[:300]
            repeat.append(m)
        runs.append((label, repeat))
    for label, repeat in runs:
        ms = statistics.median(r["ms"] for r in repeat)
        print(f"  {label:22s} {ms:8.0f} ms  {repeat[-1]['queries']:4d} SQL queries  ({ms / TRN_NODES:.0f} ms a node)")
        record("ingest", f"Neuron monitor post, {label}", ms / TRN_NODES, "ms a node", "", None)
    open_events = HealthEvent.objects.filter(cluster=cluster, resolved_at=None).count()
    print(f"  open events afterwards {open_events:8d}  (one uncorrected SRAM ECC)")
    record("ingest", "Neuron monitor: open events (one uncorrected SRAM ECC planted)", open_events, "", "1",
           open_events == 1)  # fmt: skip
