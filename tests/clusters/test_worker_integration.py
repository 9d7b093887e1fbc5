"""End to end with a real Celery worker (Redis in CI, a private filesystem broker otherwise) and moto's
ThreadedMotoServer speaking real HTTP to boto3. The test plays the cloud's part through the emulator's
backend: a cluster still Creating, a node in Failure, the node recovered."""

import time
from contextlib import contextmanager

import pytest
from celery.contrib.testing.worker import start_worker
from django.conf import settings as django_settings
from django.db import OperationalError, transaction
from moto.sagemaker import models as sagemaker_models

from portal.celery import app
from tests.clusters.conftest import cloud_org
from workloads.clusters import tasks as cluster_tasks
from workloads.clusters.services import GroupRequest, create_cluster, request_delete
from workloads.models import Cluster, HealthEvent

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("catalog")]


@contextmanager
def broker(tmp_path):
    """Redis when CELERY_BROKER_URL says so (CI); else a filesystem broker private to this test."""
    saved = {key: app.conf[key] for key in ("broker_url", "broker_transport_options")}
    if not django_settings.CELERY_BROKER_URL.startswith("redis"):
        folder = str(tmp_path / "broker")
        app.conf.broker_url = "filesystem://"
        app.conf.broker_transport_options = {
            "data_folder_in": folder,
            "data_folder_out": folder,
            "processed_folder": str(tmp_path / "processed"),
            "control_folder": str(tmp_path / "control"),
        }
        for sub in ("broker", "processed", "control"):
            (tmp_path / sub).mkdir()
    forget_connections()  # producers must connect to the broker configured above
    try:
        yield
    finally:
        app.conf.update(saved)
        forget_connections()


def forget_connections() -> None:
    # Earlier tests may have published already: Celery caches the connection pool and the producer
    # pool built on it, which would keep sending to the previous broker.
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture
def worker(tmp_path, emulator_server):
    with (
        broker(tmp_path),
        start_worker(app, pool="solo", perform_ping_check=False, loglevel="WARNING", queues=["celery", "polls"]),
    ):
        yield


def wait_for(predicate, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except OperationalError:
            # SQLite's shared in-memory test database locks whole tables while the worker thread
            # writes; PostgreSQL (CI) never gets here. Look again shortly.
            pass
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def status(cluster) -> str:
    return Cluster.objects.values_list("status", flat=True).get(pk=cluster.pk)


def poll_now(cluster) -> None:
    """What beat does every minute (with the cluster's last poll made stale)."""
    Cluster.objects.filter(pk=cluster.pk).update(last_polled_at=None)
    cluster_tasks.poll_clusters.delay()


def test_requested_to_in_service_degraded_recovered_and_deleted_through_a_real_worker(worker, monkeypatch):
    ready = cloud_org()
    org, allocation, actor, emulator = ready.org, ready.allocation, ready.actor, ready.emulator

    # The real service takes minutes in Creating; the emulator is InService at once unless told otherwise.
    real_init = sagemaker_models.Cluster.__init__

    def creating(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        self.status = "Creating"

    monkeypatch.setattr(sagemaker_models.Cluster, "__init__", creating)

    with transaction.atomic():
        cluster = create_cluster(
            organization=org,
            allocation=allocation,
            name="llm",
            kind=Cluster.Kind.HYPERPOD_SLURM,
            groups=[GroupRequest("p5.48xlarge", 2)],
            actor=actor,
        )
        assert status(cluster) == "requested"
    # Committed: the worker picks the provisioning task up.
    wait_for(lambda: emulator.clusters() == [cluster.cloud_name], "the create call")
    # The task is done once it has recorded what the cloud answered (last_polled_at is set with it).
    recorded = Cluster.objects.filter(pk=cluster.pk, status="provisioning", last_polled_at__isnull=False)
    wait_for(recorded.exists, "provisioning recorded")
    assert emulator.cluster(cluster.cloud_name).status == "Creating"

    emulator.set_cluster_status(cluster.cloud_name, "InService")
    poll_now(cluster)
    wait_for(lambda: status(cluster) == "in_service", "in service")
    wait_for(lambda: cluster.nodes.count() == 3, "node sync")

    emulator.set_node_status(cluster.cloud_name, "workers-p5-48xlarge-0", "Failure")
    poll_now(cluster)
    wait_for(lambda: status(cluster) == "degraded", "degraded")
    event = HealthEvent.objects.get(cluster=cluster)
    assert (event.kind, event.instance_id, event.resolved_at) == ("node_failure", "workers-p5-48xlarge-0", None)

    emulator.set_node_status(cluster.cloud_name, "workers-p5-48xlarge-0", "Running")
    poll_now(cluster)
    wait_for(lambda: status(cluster) == "in_service", "recovered")
    event.refresh_from_db()
    assert event.resolved_at is not None

    request_delete(cluster=Cluster.objects.get(pk=cluster.pk), actor=actor)
    wait_for(lambda: status(cluster) == "deleted", "deleted")
    assert emulator.clusters() == []
    assert list(cluster.events.order_by("pk").values_list("from_status", "to_status")) == [
        ("", "requested"),
        ("requested", "provisioning"),
        ("provisioning", "in_service"),
        ("in_service", "degraded"),
        ("degraded", "in_service"),
        ("in_service", "deleting"),
        ("deleting", "deleted"),
    ]


def test_a_worker_runs_each_queues_heartbeat_and_health_reports_how_long_it_waited(worker, client):
    from workloads.operations.models import WorkerHeartbeat
    from workloads.operations.tasks import heartbeat

    for queue in ("celery", "polls"):
        heartbeat.apply_async(args=[queue], queue=queue)  # what beat sends every 30 s
    wait_for(lambda: WorkerHeartbeat.objects.count() == 2, "both heartbeats")
    for row in WorkerHeartbeat.objects.all():
        assert row.sent_at < row.ran_at  # the send time came with the message, not from the worker's clock
        assert row.waited_seconds < 30
        assert row.worker  # the host that ran it
    body = client.get("/healthz?deep=1").json()
    assert body["worker"] == "ok"
    assert {queue: state["state"] for queue, state in body["queues"].items()} == {"celery": "ok", "polls": "ok"}
