"""Cluster polling: 1,000 HyperPod clusters in the emulator (moto's ThreadedMotoServer, real HTTP),
one full poll cycle with one worker, and the cost per cluster next to a bare describe_cluster call.

A cycle is what beat starts every minute: the fan-out task picks the clusters to poll and hands them
out in batches; here one worker (eager, in this process) runs every batch in turn. Each cluster costs
a describe_cluster and a list_cluster_nodes call plus the database sync of its nodes, health events
and run intervals. The first cycle discovers every node (inserts); later cycles are the steady state.

What the clusters-a-minute figure means: one worker, against an emulator in this very process (it answers each call
in the few milliseconds measured by the bare calls, and shares the GIL with the worker). Real AWS answers each call
in tens of milliseconds, so the bench also prints what one worker would poll against it: the measured cost of
everything but the two calls (database sync, mapping, Celery) plus an assumed round trip per call (AWS_RTT_MS, 60 ms
by default, BENCH_AWS_RTT_MS to change: an assumption for an HTTPS call to the SageMaker API in the portal's own
region on a reused connection, AWS publishing no figure; not measured here). Goals, against that estimate: a batch
of POLL_BATCH_SIZE clusters within its soft time limit, and one worker polling the program's fleet (151 nodes: the
127 p5.48xlarge and 24 trn1.32xlarge of bench/usage.py's program, each its own cluster at worst) within beat's
poll interval. It also prints the workers that poll 20,000 nodes a minute in clusters of this bench's shape.
BENCH_TINY=1: 6 clusters of 3 tenants, 10 bare calls.
"""

import os
import socket
import statistics
import time
from datetime import date, timedelta

from bench._django import setup
from bench._report import record, tiny

CLUSTERS = tiny(1_000, 6)
ORGS = tiny(12, 3)
WORKERS_PER_CLUSTER = 2
BARE_CALLS = tiny(200, 10)
AWS_RTT_MS = float(os.environ.get("BENCH_AWS_RTT_MS", "60"))  # an assumption, see above
FLEET_NODES = 151  # 127 p5.48xlarge + 24 trn1.32xlarge (bench/usage.py's program)
BIG_FLEET_NODES = 20_000


def start_emulator() -> tuple[object, str]:
    from moto.moto_server.threaded_moto_server import ThreadedMotoServer

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    return server, f"http://127.0.0.1:{port}"


def main() -> None:
    setup()
    import logging

    logging.disable(logging.INFO)  # the emulator logs every request
    server, url = start_emulator()
    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1")
    os.environ.pop("AWS_SESSION_TOKEN", None)
    from django.conf import settings

    settings.AWS_ENDPOINT_URL = url
    from portal.celery import app
    from portal.cloud import AccountAccess, get_provider, session_for
    from tenants.models import Allocation, CapacityPool, InstanceType, Organization, Program, Region
    from workloads.clusters import tasks as cluster_tasks
    from workloads.clusters.provisioning import build_spec
    from workloads.models import Cluster, ClusterInstanceGroup, ClusterNode, NodeInterval

    app.conf.task_always_eager = True  # one worker: every batch runs here, one after another
    today = date.today()
    program = Program.objects.create(
        name="Bench", slug="bench-clusters", starts_on=today - timedelta(days=30), ends_on=today + timedelta(days=150)
    )
    pool = CapacityPool.objects.create(
        program=program,
        instance_type=InstanceType.objects.get(api_name="p5.48xlarge"),
        region=Region.US_EAST_1,
        total_instances=100_000,
        starts_on=program.starts_on,
        ends_on=program.ends_on,
    )
    orgs = [
        Organization.objects.create(
            name=f"Bench org {n}",
            slug=f"bench-{n}",
            aws_account_id=f"{300000000000 + n:012d}",
            role_arn=f"arn:aws:iam::{300000000000 + n:012d}:role/PortalAccess",
            external_id=f"bench-{n}",
        )
        for n in range(ORGS)
    ]
    allocations = {
        org.pk: Allocation.objects.create(
            organization=org,
            pool=pool,
            instance_count=10_000,
            starts_on=program.starts_on,
            ends_on=program.ends_on,
            status=Allocation.Status.ACTIVE,
        )
        for org in orgs
    }

    from portal.cloud.lifecycle import SAMPLE_ON_CREATE, seed_lifecycle_scripts

    for org in orgs:
        session = session_for(AccountAccess.for_organization(org, "us-east-1"))
        uri = f"s3://sagemaker-{org.slug}-lifecycle/hyperpod/"
        seed_lifecycle_scripts(session, uri, {"on_create.sh": SAMPLE_ON_CREATE})
    print(f"creating {CLUSTERS:,} HyperPod clusters in the emulator ({ORGS} tenant accounts) …", flush=True)
    started = time.perf_counter()
    clusters = []
    for n in range(CLUSTERS):
        org = orgs[n % ORGS]
        cluster = Cluster.objects.create(
            organization=org,
            allocation=allocations[org.pk],
            name=f"bench-{n}",
            kind=Cluster.Kind.HYPERPOD_SLURM,
            region="us-east-1",
            status=Cluster.Status.PROVISIONING,
            cloud_name=f"fmp-{n}-bench",
            lifecycle_s3_uri=f"s3://sagemaker-{org.slug}-lifecycle/hyperpod/",
            execution_role_arn=f"arn:aws:iam::{org.aws_account_id}:role/HyperPodExecution",
            subnet_ids=["subnet-0abc1234"],
            security_group_ids=["sg-0abc1234"],
        )
        groups = [
            ClusterInstanceGroup(
                organization=org,
                cluster=cluster,
                name="controller-machine",
                role="controller",
                instance_type="m5.12xlarge",
                instance_count=1,
            ),
            ClusterInstanceGroup(
                organization=org,
                cluster=cluster,
                name="workers-p5-48xlarge",
                role="worker",
                instance_type="p5.48xlarge",
                instance_count=WORKERS_PER_CLUSTER,
            ),
        ]
        ClusterInstanceGroup.objects.bulk_create(groups)
        session = session_for(AccountAccess.for_organization(org, "us-east-1"))
        get_provider(cluster.kind, session).create(build_spec(cluster, groups))
        clusters.append(cluster)
    print(f"  created in {time.perf_counter() - started:.1f} s", flush=True)

    # Split each cycle's time between the cloud calls and the rest (database sync, mapping, Celery).
    from django.db import connection

    from portal.cloud.hyperpod import HyperPodProvider

    cloud_seconds = [0.0]

    def timed(method):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                cloud_seconds[0] += time.perf_counter() - start

        return wrapper

    HyperPodProvider.describe = timed(HyperPodProvider.describe)
    HyperPodProvider.list_nodes = timed(HyperPodProvider.list_nodes)

    def cycle() -> dict:
        Cluster.objects.update(last_polled_at=None)  # a minute has passed since the last cycle
        queries = [0]

        def count(execute, sql, params, many, context):
            queries[0] += 1
            return execute(sql, params, many, context)

        cloud_seconds[0] = 0.0
        with connection.execute_wrapper(count):
            start = time.perf_counter()
            polled = cluster_tasks.poll_clusters.delay().get()
            total = time.perf_counter() - start
        return {"polled": polled, "ms": total * 1000, "cloud_ms": cloud_seconds[0] * 1000, "queries": queries[0]}

    first = cycle()
    assert Cluster.objects.filter(status=Cluster.Status.IN_SERVICE).count() == CLUSTERS, "every cluster in service"
    steady = cycle()
    nodes = ClusterNode.objects.count()
    intervals = NodeInterval.objects.count()
    assert intervals == nodes == CLUSTERS * (1 + WORKERS_PER_CLUSTER), "one interval per node, never more"

    # The floor: the same two calls, bare, through the same boto3 client and emulator.
    org = orgs[0]
    client = session_for(AccountAccess.for_organization(org, "us-east-1")).client("sagemaker")
    describe, both = [], []
    for n in range(BARE_CALLS):
        name = f"fmp-{(n % (CLUSTERS // ORGS)) * ORGS}-bench"  # org 0 owns clusters 0, 12, 24, …
        start = time.perf_counter()
        client.describe_cluster(ClusterName=name)
        describe.append(time.perf_counter() - start)
        client.list_cluster_nodes(ClusterName=name, MaxResults=100)
        both.append(time.perf_counter() - start)
    server.stop()

    bare = statistics.median(describe) * 1000
    bare_both = statistics.median(both) * 1000
    batch = cluster_tasks.POLL_BATCH_SIZE
    print(f"\none poll cycle, one worker, {CLUSTERS:,} clusters ({nodes:,} nodes), batches of {batch}:")
    print(f"{'':32}{'total s':>9}{'ms/cluster':>12}{'cloud ms':>10}{'other ms':>10}{'q/cluster':>11}")
    for label, result in (("first cycle (discovers nodes)", first), ("steady state", steady)):
        per = result["ms"] / CLUSTERS
        cloud = result["cloud_ms"] / CLUSTERS
        print(
            f"{label:32}{result['ms'] / 1000:>9.1f}{per:>12.1f}{cloud:>10.1f}{per - cloud:>10.1f}"
            f"{result['queries'] / CLUSTERS:>11.1f}"
        )
    print(f"{'bare describe_cluster':32}{'':>9}{bare:>12.1f}")
    print(f"{'bare describe + list_cluster_nodes':32}{'':>9}{bare_both:>12.1f}")
    per_cluster = steady["ms"] / CLUSTERS
    other = (steady["ms"] - steady["cloud_ms"]) / CLUSTERS
    emulated_per_minute = 60_000 / per_cluster
    print(
        f"\nper cluster, steady state: {per_cluster:.1f} ms = {steady['cloud_ms'] / CLUSTERS:.1f} ms in the two cloud "
        f"calls (bare: {bare_both:.1f} ms) + {other:.1f} ms database sync and task overhead."
    )
    print(
        f"what that means: one worker covers ~{emulated_per_minute:,.0f} clusters a minute against this emulator, "
        f"which answers a call in ~{bare_both / 2:.1f} ms (measured, bare) from inside this process; not against AWS."
    )
    from django.conf import settings

    interval = float(settings.CELERY_BEAT_SCHEDULE["poll-clusters"]["schedule"])
    soft_limit = cluster_tasks.POLL_SOFT_LIMIT
    real = other + 2 * AWS_RTT_MS
    real_per_minute = 60_000 / real
    batch_seconds = batch * real / 1000
    fleet_seconds = FLEET_NODES * real / 1000
    nodes_per_cluster = 1 + WORKERS_PER_CLUSTER
    big_clusters = -(-BIG_FLEET_NODES // nodes_per_cluster)
    workers = -(-big_clusters // max(int(real_per_minute * interval / 60), 1))
    print(
        f"against real AWS, assuming {AWS_RTT_MS:.0f} ms a call (not measured): {other:.1f} + 2 × {AWS_RTT_MS:.0f} = "
        f"{real:.0f} ms a cluster, ~{real_per_minute:,.0f} clusters a minute per worker; a batch of {batch} in "
        f"{batch_seconds:.1f} s (soft limit {soft_limit} s); the program's {FLEET_NODES} nodes, one cluster each, in "
        f"{fleet_seconds:.1f} s (poll interval {interval:.0f} s); {BIG_FLEET_NODES:,} nodes in clusters of "
        f"{nodes_per_cluster} ({big_clusters:,} clusters) need {workers} workers polling every {interval:.0f} s."
    )
    record("clusters", "clusters a minute, one worker, in-process emulator", emulated_per_minute, "clusters/min",
           "", None)  # fmt: skip
    record("clusters", "emulator: one bare cloud call", bare_both / 2, "ms", "", None)
    record("clusters", "non-AWS cost a cluster (sync, mapping, Celery)", other, "ms", "", None)
    record("clusters", f"estimate, real AWS at {AWS_RTT_MS:.0f} ms a call: clusters a minute, one worker",
           real_per_minute, "clusters/min", "", None)  # fmt: skip
    record("clusters", f"estimate, real AWS: a batch of {batch} clusters", batch_seconds, "s",
           f"< {soft_limit} s (the batch's soft limit)", batch_seconds < soft_limit)  # fmt: skip
    record("clusters", f"estimate, real AWS: the program's {FLEET_NODES} nodes, one cluster each, one worker",
           fleet_seconds, "s", f"< {interval:.0f} s (beat's poll interval)", fleet_seconds < interval)  # fmt: skip
    record("clusters", f"estimate, real AWS: workers to poll {BIG_FLEET_NODES:,} nodes every {interval:.0f} s",
           workers, "workers", "", None)  # fmt: skip
    record("clusters", "run intervals per node after two cycles", intervals / nodes, "", "1", intervals == nodes)


if __name__ == "__main__":
    main()
