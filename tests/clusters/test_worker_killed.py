"""A real worker process killed (kill -9) mid-provision, on Redis and on the embedded filesystem broker.

Measured before the reconciler: the clusters stayed `provisioning` or `requested`; Redis gave the messages back
only after its one-hour visibility timeout, and the filesystem broker never did. Then the reconciler waited out the
killed task's time limit plus a grace (6 minutes by default). Here the first worker hangs on an AWS endpoint that
accepts connections and never answers, its heartbeats renew each attempt's lease, it is killed with its pool, and a
second worker starts on the emulator: the reconciler must send the work again because the leases ran out (the time
limits are far off), and bring every cluster into service, with exactly one cloud cluster each.
"""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
import redis
from django.conf import settings as django_settings
from django.db import connection, transaction
from django.utils import timezone

from portal.celery import app
from tests.clusters.conftest import cloud_org
from tests.clusters.test_worker_integration import forget_connections, wait_for
from tests.environment import unavailable
from workloads.clusters import tasks as cluster_tasks
from workloads.clusters.reconcile import stalled_attempt
from workloads.clusters.services import GroupRequest, create_cluster
from workloads.models import Cluster

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("catalog")]
ROOT = Path(django_settings.BASE_DIR)
TASK_TIME_LIMIT = 300  # the default CLUSTER_TASK_TIME_LIMIT: far beyond the time this test takes
HEARTBEAT, LEASE = 2, 6  # CLUSTER_HEARTBEAT_SECONDS and CLUSTER_LEASE_SECONDS, short for the test (15 and 45 s)
CLUSTERS = 3


@pytest.fixture
def black_hole():
    """An endpoint that accepts every connection and never answers: AWS hanging, not refusing."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for sock in held:
        sock.close()
    server.close()


def redis_url() -> str:
    url = os.environ.get("CELERY_BROKER_URL", "")
    return url if url.startswith("redis://") else "redis://127.0.0.1:6379/14"


@pytest.fixture(params=["redis", "filesystem"])
def broker_env(request, tmp_path, monkeypatch):
    """The broker both this process (which publishes) and the worker processes use."""
    saved = {key: app.conf[key] for key in ("broker_url", "broker_transport_options")}
    env = {"PORTAL_VAR_DIR": str(tmp_path / "var")}
    if request.param == "redis":
        url = redis_url()
        try:
            redis.Redis.from_url(url, socket_connect_timeout=2).ping()
        except redis.ConnectionError as error:
            unavailable(f"no Redis at {url}: {error}")
        monkeypatch.setenv("CELERY_BROKER_URL", url)
        app.conf.update(broker_url=url, broker_transport_options=django_settings.CELERY_BROKER_TRANSPORT_OPTIONS)
        env["CELERY_BROKER_URL"] = url
    else:
        # settings.py puts the filesystem broker's folders under PORTAL_VAR_DIR/broker.
        base = tmp_path / "var" / "broker"
        options = {
            "data_folder_in": str(base / "queue"),
            "data_folder_out": str(base / "queue"),
            "processed_folder": str(base / "processed"),
            "control_folder": str(base / "control"),
            "store_processed": False,
        }
        for folder in set(options.values()) - {False}:
            Path(folder).mkdir(parents=True, exist_ok=True)
        monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
        app.conf.update(broker_url="filesystem://", broker_transport_options=options)
        env["CELERY_BROKER_URL"] = "filesystem://"
    forget_connections()
    yield env
    app.conf.update(saved)
    forget_connections()


def database_url() -> str:
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


class Worker:
    """`celery -A portal worker` as its own process group, the way make run and docker-compose start it."""

    def __init__(self, name: str, env: dict, log: Path):
        self.log = log
        self.process = subprocess.Popen(  # noqa: S603 (our own interpreter and arguments)
            [sys.executable, "-m", "celery", "-A", "portal", "worker", "--queues=celery", "--pool=prefork"]
            + ["--concurrency=3", f"--hostname={name}@%h", "--loglevel=INFO", "--without-mingle", "--without-gossip"],
            cwd=ROOT,
            env=env,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def kill(self) -> None:
        """kill -9 to the worker and its pool processes at once: nothing is acknowledged, nothing cleaned up."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()


def worker_env(broker_env: dict, aws_endpoint: str) -> dict:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("AWS_", "PYTEST", "CELERY_"))}
    env.update(broker_env)
    env.update(
        DJANGO_SETTINGS_MODULE="portal.settings",
        DATABASE_URL=database_url(),
        AWS_ENDPOINT_URL=aws_endpoint,
        AWS_ACCESS_KEY_ID="emulator",
        AWS_SECRET_ACCESS_KEY="emulator",
        AWS_DEFAULT_REGION="us-east-1",
        CLUSTER_TASK_TIME_LIMIT=str(TASK_TIME_LIMIT),
        CLUSTER_HEARTBEAT_SECONDS=str(HEARTBEAT),
        CLUSTER_LEASE_SECONDS=str(LEASE),
    )
    return env


def statuses(clusters) -> list[str]:
    return list(Cluster.objects.filter(pk__in=[c.pk for c in clusters]).order_by("pk").values_list("status", flat=True))


def claims(clusters) -> dict[int, tuple]:
    rows = Cluster.objects.filter(pk__in=[c.pk for c in clusters])
    return {row[0]: row[1:] for row in rows.values_list("pk", "claim", "heartbeat_at", "lease_until", "running_until")}


def test_a_worker_killed_mid_provision_leaves_nothing_stuck(
    broker_env, black_hole, emulator_server, tmp_path, settings, monkeypatch
):
    # RECONCILE_GRACE stays at its default (60 s): only a lease that ran out can send the work again this early.
    settings.CLUSTER_HEARTBEAT_SECONDS, settings.CLUSTER_LEASE_SECONDS = HEARTBEAT, LEASE
    # The time limit travels in the message, set by the sender (this process), like web's CLUSTER_TASK_TIME_LIMIT.
    monkeypatch.setattr(cluster_tasks.provision_cluster, "time_limit", TASK_TIME_LIMIT)
    monkeypatch.setattr(cluster_tasks.provision_cluster, "soft_time_limit", TASK_TIME_LIMIT - 30)
    monkeypatch.setattr(cluster_tasks.provision_cluster, "_exec_options", None)  # Celery caches them per task
    ready = cloud_org()
    org, allocation, actor, emulator = ready.org, ready.allocation, ready.actor, ready.emulator

    hanging = Worker("hanging", worker_env(broker_env, black_hole), tmp_path / "hanging.log")
    replacement = None
    resent: dict[int, list] = {}  # cluster → its claim as the reconciler found it, each time it sent the work again
    try:
        clusters = []
        for n in range(CLUSTERS):
            with transaction.atomic():
                clusters.append(
                    create_cluster(
                        organization=org,
                        allocation=allocation,
                        name=f"llm-{n}",
                        kind=Cluster.Kind.HYPERPOD_SLURM,
                        groups=[GroupRequest("p5.48xlarge", 2)],
                        actor=actor,
                    )
                )
        # Every task has started (status provisioning) and hangs on its first AWS call.
        wait_for(lambda: statuses(clusters) == ["provisioning"] * CLUSTERS, "the tasks to start", timeout=60)
        first = claims(clusters)
        assert all(claim for claim, *_ in first.values())
        # Each attempt's heartbeat renews its lease while its AWS call hangs (the worker's pool processes run them).
        wait_for(lambda: all(claims(clusters)[pk][1] > first[pk][1] for pk in first), "a heartbeat of each", timeout=30)
        hanging.kill()
        killed_at = time.monotonic()
        assert statuses(clusters) == ["provisioning"] * CLUSTERS
        assert emulator.clusters() == []

        replacement = Worker("replacement", worker_env(broker_env, emulator_server), tmp_path / "replacement.log")

        def healed() -> bool:
            before, now = claims(clusters), timezone.now()
            for cluster in Cluster.objects.filter(pk__in=[c.pk for c in clusters]):
                if stalled := stalled_attempt(cluster, now):
                    # What the page and the API say meanwhile: when it stopped answering, when it is retried.
                    assert stalled.stopped_answering_at == cluster.heartbeat_at < now
            sent = cluster_tasks.reconcile_clusters()  # what beat runs every 30 s
            after = timezone.now()  # the reconciler judged them late between `now` and this
            for cluster_id in sent:
                resent.setdefault(cluster_id, []).append((*before[cluster_id], after))
            # In service, and the attempt that got it there has settled (released its claim): it records the status
            # first, so the workers are not stopped in between.
            settled = not any(claim for claim, *_ in claims(clusters).values())
            return statuses(clusters) == ["in_service"] * CLUSTERS and settled

        wait_for(healed, "every cluster in service", timeout=120)
        healed_after = time.monotonic() - killed_at
    except BaseException:
        for log in (tmp_path / "hanging.log", tmp_path / "replacement.log"):
            if log.exists():
                print(f"--- {log.name}\n{log.read_text()[-6000:]}")
        raise
    finally:
        hanging.stop()
        if replacement:
            replacement.stop()

    # Each was sent again once, because its lease ran out while its time limit was still far off.
    assert sorted(resent) == sorted(c.pk for c in clusters)
    for sends in resent.values():
        [(claim, _, lease_until, running_until, at)] = sends
        assert claim and lease_until < at < running_until - timedelta(seconds=settings.RECONCILE_GRACE)
    # Exactly one cloud cluster each, under its deterministic name, with its id recorded.
    assert sorted(emulator.clusters()) == sorted(c.cloud_name for c in clusters)
    for cluster in Cluster.objects.filter(pk__in=[c.pk for c in clusters]):
        assert cluster.cloud_id.endswith(f":cluster/{cluster.cloud_name}")
        assert (cluster.last_error, cluster.next_attempt_at, cluster.claim, cluster.lease_until) == ("", None, "", None)
    print(f"healed {healed_after:.1f} s after the kill (lease {LEASE} s, time limit {TASK_TIME_LIMIT} s)")
