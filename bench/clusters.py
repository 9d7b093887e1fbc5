"""Cluster polling: HyperPod clusters in the emulator (moto's ThreadedMotoServer, real HTTP), poll cycles with one
worker, and the cost per cluster next to the bare describe_cluster + list_cluster_nodes calls, for three shapes:
1,000 clusters of 3 nodes (a controller and two workers), 200 of 8 and 60 of 64 (a controller and 63 workers).

A cycle is what beat starts every minute: it sends one message per batch of POLL_BATCH_SIZE clusters due, and each
batch claims its clusters as it starts; here one worker (eager, in this process) runs every batch in turn. Each
cluster costs a describe_cluster and a list_cluster_nodes call, then the batch applies every answer in one
transaction (the sync of nodes, health events and run intervals). The first cycle discovers every node (inserts);
later cycles are the steady state. Each batch also asks for the usage rollup, a task of the default queue run by
another worker: the bench runs it once after each cycle and times it apart. The goal (issue 36): a steady-state
poll within 2× the bare calls, measured in ROUNDS paired rounds (a cycle, then the bare calls, one after the other)
so that both see the same machine.

What the clusters-a-minute figure means: one worker, against an emulator in this very process (it answers each call
in the few milliseconds measured by the bare calls, and shares the GIL with the worker). Real AWS answers each call
in tens of milliseconds, so the bench also works out what one worker would poll against it: the measured cost of
everything but the two calls (database sync, mapping, Celery) plus an assumed round trip per call (AWS_RTT_MS, 60 ms
by default, BENCH_AWS_RTT_MS to change, and 100 ms beside it: assumptions for an HTTPS call to the SageMaker API in
the portal's own region on a reused connection, AWS publishing no figure; not measured here). Goals, against that
estimate: a batch of POLL_BATCH_SIZE clusters within its soft time limit, and one worker polling the program's fleet
(151 nodes: the 127 p5.48xlarge and 24 trn1.32xlarge of bench/usage.py's program, each its own cluster at worst)
within beat's poll interval. It also works out the workers (worker processes: a poll waits on the network, so one
process polls one cluster at a time) that poll 20,000 nodes a minute in clusters of each shape.
BENCH_TINY=1: 6 clusters of 3 nodes, 2 of 8 and 2 of 64 across 3 tenants, one round, 4 bare calls.
"""

import os
import socket
import statistics
import time
from datetime import date, timedelta

from bench._django import setup
from bench._report import record, table, tiny

# (nodes a cluster, clusters): a controller and nodes - 1 workers each.
SHAPES = ((3, tiny(1_000, 6)), (8, tiny(200, 2)), (64, tiny(60, 2)))
ORGS = tiny(12, 3)
ROUNDS = tiny(3, 1)
BARE_CALLS = tiny(60, 4)  # a round's bare describe + list pairs
AWS_RTT_MS = float(os.environ.get("BENCH_AWS_RTT_MS", "60"))  # an assumption, see above
RTTS = sorted({AWS_RTT_MS, 100.0})
GOAL_RATIO = 2.0
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
    from portal.cloud import AccountAccess, session_for
    from portal.cloud.lifecycle import SAMPLE_ON_CREATE, seed_lifecycle_scripts
    from workloads.models import Cluster

    app.conf.task_always_eager = True  # one worker: every batch runs here, one after another
    orgs, allocations = tenants()
    for org in orgs:
        session = session_for(AccountAccess.for_organization(org, "us-east-1"))
        seed_lifecycle_scripts(
            session, f"s3://sagemaker-{org.slug}-lifecycle/hyperpod/", {"on_create.sh": SAMPLE_ON_CREATE}
        )
    watch_cloud_calls()
    results = {}
    try:
        for nodes, clusters in SHAPES:
            results[nodes] = measure_shape(orgs, allocations, nodes, clusters)
            # Out of the next shape's cycles (the cycle polls every cluster due).
            Cluster.objects.update(status=Cluster.Status.DELETED)
    finally:
        server.stop()
    report(results)


def tenants():
    from tenants.models import Allocation, CapacityPool, InstanceType, Organization, Program, Region

    today = date.today()
    program = Program.objects.create(
        name="Bench", slug="bench-clusters", starts_on=today - timedelta(days=30), ends_on=today + timedelta(days=150)
    )
    pool = CapacityPool.objects.create(
        program=program,
        instance_type=InstanceType.objects.get(api_name="p5.48xlarge"),
        region=Region.US_EAST_1,
        total_instances=1_000_000,
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
            instance_count=50_000,
            starts_on=program.starts_on,
            ends_on=program.ends_on,
            status=Allocation.Status.ACTIVE,
        )
        for org in orgs
    }
    return orgs, allocations


def create_clusters(orgs, allocations, nodes: int, count: int) -> list:
    from portal.cloud import AccountAccess, get_provider, session_for
    from workloads.clusters.provisioning import build_spec
    from workloads.models import Cluster, ClusterInstanceGroup

    print(f"\ncreating {count:,} HyperPod clusters of {nodes} nodes in the emulator ({ORGS} tenant accounts) …")
    started = time.perf_counter()
    clusters = []
    for n in range(count):
        org = orgs[n % ORGS]
        cluster = Cluster.objects.create(
            organization=org,
            allocation=allocations[org.pk],
            name=f"bench-{nodes}-{n}",
            kind=Cluster.Kind.HYPERPOD_SLURM,
            region="us-east-1",
            status=Cluster.Status.PROVISIONING,
            cloud_name=f"fmp-{n}-bench-{nodes}",
            lifecycle_s3_uri=f"s3://sagemaker-{org.slug}-lifecycle/hyperpod/",
            execution_role_arn=f"arn:aws:iam::{org.aws_account_id}:role/HyperPodExecution",
            subnet_ids=["subnet-0abc1234"],
            security_group_ids=["sg-0abc1234"],
        )
        groups = [
            ClusterInstanceGroup(organization=org, cluster=cluster, name="controller-machine", role="controller",
                                 instance_type="m5.12xlarge", instance_count=1),
            ClusterInstanceGroup(organization=org, cluster=cluster, name="workers-p5-48xlarge", role="worker",
                                 instance_type="p5.48xlarge", instance_count=nodes - 1),
        ]  # fmt: skip
        ClusterInstanceGroup.objects.bulk_create(groups)
        session = session_for(AccountAccess.for_organization(org, "us-east-1"))
        get_provider(cluster.kind, session).create(build_spec(cluster, groups))
        clusters.append(cluster)
    print(f"  created in {time.perf_counter() - started:.1f} s", flush=True)
    return clusters


CLOUD_SECONDS = [0.0]


def watch_cloud_calls() -> None:
    """Split each cycle's time between the cloud calls and the rest (database sync, mapping, Celery)."""
    from portal.cloud.hyperpod import HyperPodProvider

    def timed(method):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                CLOUD_SECONDS[0] += time.perf_counter() - start

        return wrapper

    HyperPodProvider.describe = timed(HyperPodProvider.describe)
    HyperPodProvider.list_nodes = timed(HyperPodProvider.list_nodes)


def cycle(count: int) -> dict:
    from django.db import connection

    from workloads.clusters import tasks as cluster_tasks
    from workloads.models import Cluster
    from workloads.usage import tasks as usage_tasks

    Cluster.objects.update(last_polled_at=None)  # a minute has passed since the last cycle
    queries = [0]

    def counted(execute, sql, params, many, context):
        queries[0] += 1
        return execute(sql, params, many, context)

    CLOUD_SECONDS[0] = 0.0
    # Each batch asks for the usage rollup (a task of the default queue, not the poll's worker): counted here and
    # run once after the cycle, timed apart, as a worker of that queue would run it.
    asked = []
    usage_tasks.roll_up.delay = lambda: asked.append(1)
    try:
        with connection.execute_wrapper(counted):
            start = time.perf_counter()
            due = cluster_tasks.poll_clusters.delay().get()
            total = time.perf_counter() - start
    finally:
        del usage_tasks.roll_up.delay
    assert due == count and asked, (due, count)
    start = time.perf_counter()
    usage_tasks.roll_up()
    rollup = time.perf_counter() - start
    return {"ms": total * 1000 / count, "cloud_ms": CLOUD_SECONDS[0] * 1000 / count, "queries": queries[0] / count,
            "rollup_ms": rollup * 1000}  # fmt: skip


def bare_calls(client, names: list[str]) -> list[float]:
    """describe_cluster + list_cluster_nodes, bare, through a boto3 client of the same emulator: ms a pair."""
    pairs = []
    for n in range(BARE_CALLS):
        name = names[n % len(names)]
        start = time.perf_counter()
        client.describe_cluster(ClusterName=name)
        client.list_cluster_nodes(ClusterName=name, MaxResults=100)
        pairs.append((time.perf_counter() - start) * 1000)
    return pairs


def measure_shape(orgs, allocations, nodes: int, count: int) -> dict:
    from portal.cloud import AccountAccess, session_for
    from workloads.models import Cluster, ClusterNode, NodeInterval

    clusters = create_clusters(orgs, allocations, nodes, count)
    first = cycle(count)
    assert Cluster.objects.filter(status=Cluster.Status.IN_SERVICE).count() == count, "every cluster in service"
    client = session_for(AccountAccess.for_organization(orgs[0], "us-east-1")).client("sagemaker")
    names = [c.cloud_name for c in clusters if c.organization_id == orgs[0].pk]
    rounds = []
    for _round in range(ROUNDS):  # paired: the poll and the bare calls, one after the other, round by round
        steady = cycle(count)
        bare = statistics.median(bare_calls(client, names))
        rounds.append({**steady, "bare_ms": bare, "ratio": steady["ms"] / bare})
    polled = ClusterNode.objects.filter(cluster__in=clusters)
    intervals = NodeInterval.objects.filter(cluster__in=clusters).count()
    assert intervals == polled.count() == count * nodes, "one interval per node, never more"
    return {"count": count, "first": first, "rounds": rounds, "intervals_per_node": intervals / polled.count()}


def median_of(rounds: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in rounds)


def report(results: dict) -> None:
    from django.conf import settings

    from workloads.clusters import tasks as cluster_tasks

    batch = cluster_tasks.POLL_BATCH_SIZE
    interval = float(settings.CELERY_BEAT_SCHEDULE["poll-clusters"]["schedule"])
    soft_limit = cluster_tasks.POLL_SOFT_LIMIT
    print(f"\npoll cycles, one worker, batches of {batch}; steady state: median of {ROUNDS} paired rounds")
    header = ["nodes a cluster", "clusters", "first cycle ms/cluster", "steady ms/cluster", "in the two calls ms",
              "other ms", "queries/cluster", "bare describe + list ms", "steady ÷ bare",
              "the rollup after a cycle ms"]  # fmt: skip
    rows = []
    for nodes, r in results.items():
        rounds = r["rounds"]
        other = median_of(rounds, "ms") - median_of(rounds, "cloud_ms")
        ratios = [x["ratio"] for x in rounds]
        rows.append([nodes, r["count"], f"{r['first']['ms']:.1f}", f"{median_of(rounds, 'ms'):.1f}",
                     f"{median_of(rounds, 'cloud_ms'):.1f}", f"{other:.1f}", f"{median_of(rounds, 'queries'):.2f}",
                     f"{median_of(rounds, 'bare_ms'):.1f}",
                     f"{statistics.median(ratios):.2f}× ({min(ratios):.2f}–{max(ratios):.2f}×)",
                     f"{median_of(rounds, 'rollup_ms'):.0f}"])  # fmt: skip
        r["other"] = other
    print_table(header, rows)
    table("clusters", "poll cost per cluster", header, rows)
    for nodes, r in results.items():
        ratio = median_of(r["rounds"], "ratio")
        record("clusters", f"poll ÷ bare describe + list, clusters of {nodes} nodes (steady state)", ratio, "×",
               f"≤ {GOAL_RATIO:.0f}×", ratio <= GOAL_RATIO)  # fmt: skip
        record("clusters", f"non-AWS cost a cluster of {nodes} nodes (sync, mapping, Celery)", r["other"], "ms", "",
               None)  # fmt: skip
    small = results[SHAPES[0][0]]
    per_cluster = median_of(small["rounds"], "ms")
    record("clusters", f"clusters of {SHAPES[0][0]} nodes a minute, one worker, in-process emulator",
           60_000 / per_cluster, "clusters/min", "", None)  # fmt: skip
    record("clusters", "emulator: one bare cloud call", median_of(small["rounds"], "bare_ms") / 2, "ms", "", None)

    # Against AWS: the measured non-AWS cost plus an assumed round trip a call (two calls a cluster).
    real = small["other"] + 2 * AWS_RTT_MS
    batch_seconds = batch * real / 1000
    fleet_seconds = FLEET_NODES * real / 1000
    record("clusters", f"estimate, real AWS at {AWS_RTT_MS:.0f} ms a call: a batch of {batch} clusters", batch_seconds,
           "s", f"< {soft_limit} s (the batch's soft limit)", batch_seconds < soft_limit)  # fmt: skip
    record("clusters", f"estimate, real AWS: the program's {FLEET_NODES} nodes, one cluster each, one worker",
           fleet_seconds, "s", f"< {interval:.0f} s (beat's poll interval)", fleet_seconds < interval)  # fmt: skip
    header = ["nodes a cluster", "clusters for 20,000 nodes", "AWS round trip (assumed)", "ms a cluster",
              "a batch of 50", "worker-seconds a minute", "workers, claims at start",
              "workers, the old 30 s window"]  # fmt: skip
    rows = []
    for nodes, r in results.items():
        clusters = -(-BIG_FLEET_NODES // nodes)
        for rtt in RTTS:
            cost = r["other"] + 2 * rtt
            work = clusters * cost / 1000  # seconds of polling a minute
            workers = int(-(-work // interval))
            # The old window: batches sent at the tick expired unstarted after 30 s, so each worker polled for 30 s
            # and the batch it started last, not for the whole minute.
            old_workers = -(-work // (30 + batch * cost / 1000))
            rows.append([nodes, f"{clusters:,}", f"{rtt:.0f} ms", f"{cost:.0f}", f"{batch * cost / 1000:.1f} s",
                         f"{work:,.0f} s", int(workers), int(old_workers)])  # fmt: skip
            if rtt == AWS_RTT_MS:
                name = f"estimate, real AWS at {rtt:.0f} ms a call: workers to poll {BIG_FLEET_NODES:,} nodes"
                record("clusters", f"{name} every {interval:.0f} s in clusters of {nodes}", workers, "workers", "",
                       None)  # fmt: skip
    print(f"\nagainst real AWS (assumed round trips, not measured), {BIG_FLEET_NODES:,} nodes polled every "
          f"{interval:.0f} s:")  # fmt: skip
    print_table(header, rows)
    table("clusters", "workers for 20,000 nodes", header, rows)
    worst = max(r["intervals_per_node"] for r in results.values())
    record("clusters", "run intervals per node after the cycles", worst, "", "1", worst == 1)


def print_table(header: list[str], rows: list[list]) -> None:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  " + "  ".join(str(cell).rjust(w) for cell, w in zip(row, widths, strict=True)))


if __name__ == "__main__":
    main()
