"""Cluster polling: 1,000 HyperPod clusters in the emulator (moto's ThreadedMotoServer, real HTTP),
one full poll cycle with one worker, and the cost per cluster next to a bare describe_cluster call.

A cycle is what beat starts every minute: the fan-out task picks the clusters to poll and hands them
out in batches; here one worker (eager, in this process) runs every batch in turn. Each cluster costs
a describe_cluster and a list_cluster_nodes call plus the database sync of its nodes, health events
and run intervals. The first cycle discovers every node (inserts); later cycles are the steady state.
"""

import os
import socket
import statistics
import time
from datetime import date, timedelta

from bench._django import setup

CLUSTERS = 1_000
ORGS = 12
WORKERS_PER_CLUSTER = 2
BARE_CALLS = 200


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
    print(
        f"\nper cluster, steady state: {steady['ms'] / CLUSTERS:.1f} ms = {steady['cloud_ms'] / CLUSTERS:.1f} ms in "
        f"the two cloud calls (bare: {bare_both:.1f} ms) + {(steady['ms'] - steady['cloud_ms']) / CLUSTERS:.1f} ms "
        f"database sync and task overhead; one worker covers ~{60_000 / (steady['ms'] / CLUSTERS):,.0f} clusters "
        "a minute against this emulator (which shares the process, and its GIL, with the worker)."
    )


if __name__ == "__main__":
    main()
