"""What clusters report, at program scale.

- Jobs: one request posting 10,000 sacct rows to /api/v1/clusters/{id}/jobs/ingest/ with the cluster's reporter
  token (parse, one transaction, upsert), next to a bare bulk insert of the same rows (the goal: within 3×); then
  the same 10,000 posted again (all known: no new rows).
- GPU health: one Prometheus poll over 150 nodes × 8 GPUs (every DCGM family the rules read, as the exporter
  sends them) against a real Prometheus built by promtool, when Debian's `prometheus` package is installed:
  its time, its HTTP queries and its SQL queries; a second poll with nothing changed.

Times are medians of REPEAT runs (this machine's timings vary by tens of percent from run to run).
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench._django import measured, setup

ROWS = 10_000
NODES = 150
GPUS = 8
REPEAT = 3


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
    from workloads.jobs.models import Job
    from workloads.jobs.sacct import parse_sacct
    from workloads.jobs.services import _columns, accelerators_per_node
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

    first, again, bare = [], [], []
    for _ in range(REPEAT):
        Job.objects.all().delete()
        with measured() as m:
            response = client.post(url, body, content_type="text/plain")
        assert response.status_code == 200 and response.json()["created"] == ROWS, response.content[:300]
        first.append(m)
        with measured() as m:
            response = client.post(url, body, content_type="text/plain")
        assert response.json() == {"received": ROWS, "created": 0, "updated": 0, "unchanged": ROWS}
        again.append(m)
        assert Job.objects.count() == ROWS
        # The bare insert: the same rows, already parsed, straight into the table.
        parsed = parse_sacct(body, tz=UTC, accelerators_per_node=accelerators_per_node(cluster))
        Job.objects.all().delete()
        now = datetime.now(UTC)
        rows = [Job(organization=org, cluster=cluster, job_id=job.job_id, first_reported_at=now,
                    last_reported_at=now, **_columns(job, {})) for job in parsed]  # fmt: skip
        with measured() as m:
            Job.objects.bulk_create(rows, batch_size=1_000)
        bare.append(m)

    def median(runs):
        return statistics.median(r["ms"] for r in runs)

    print(f"  post 10,000 new        {median(first):8.0f} ms  {first[-1]['queries']:4d} queries")
    print(f"  bare bulk insert       {median(bare):8.0f} ms  {bare[-1]['queries']:4d} queries")
    print(f"  ratio post / bare      {median(first) / median(bare):8.2f}×  (goal: within 3×)")
    print(f"  re-post, all known     {median(again):8.0f} ms  {again[-1]['queries']:4d} queries  (0 new rows)")
    gpu_health(cluster, nodes)


def gpu_health(cluster, nodes) -> None:
    print(f"\nGPU health: one Prometheus poll over {NODES} nodes × {GPUS} GPUs")
    missing = [tool for tool in ("promtool", "prometheus") if not shutil.which(tool)]
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
    finally:
        factory.stop_all()
