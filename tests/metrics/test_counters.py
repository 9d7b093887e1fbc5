"""What each process counts: Celery tasks by outcome and queue, and the reports the ingest endpoints take or refuse."""

from __future__ import annotations

import pytest
from billiard.exceptions import WorkerLostError
from celery import current_app, shared_task
from celery.exceptions import TimeLimitExceeded
from celery.signals import task_failure, task_revoked
from prometheus_client import REGISTRY
from rest_framework.test import APIClient

from tests.factories import ClusterFactory, WorkloadFactory
from tests.jobs.sacct_rows import HEADER, line
from workloads.operations.tasks import heartbeat
from workloads.reporting.services import issue_token

pytestmark = pytest.mark.django_db


def sample(name: str, **labels) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@shared_task(name="tests.metrics.broken")
def broken() -> None:
    raise RuntimeError("broken on purpose")


# --- Celery tasks -----------------------------------------------------------------------------------------------------


def test_a_task_run_counts_its_outcome_and_time_by_task_and_queue():
    name = "workloads.operations.heartbeat"
    before = sample("portal_celery_tasks_total", task=name, queue="eager", outcome="success")
    timed = sample("portal_celery_task_duration_seconds_count", task=name, queue="eager")
    heartbeat.apply(args=["celery"])
    assert sample("portal_celery_tasks_total", task=name, queue="eager", outcome="success") == before + 1
    assert sample("portal_celery_task_duration_seconds_count", task=name, queue="eager") == timed + 1


def test_a_failing_task_counts_once_as_a_failure():
    before = sample("portal_celery_tasks_total", task="tests.metrics.broken", queue="eager", outcome="failure")
    broken.apply()
    assert (
        sample("portal_celery_tasks_total", task="tests.metrics.broken", queue="eager", outcome="failure") == before + 1
    )


@pytest.mark.parametrize(
    ("exception", "outcome"), [(TimeLimitExceeded(300), "time_limit"), (WorkerLostError("SIGKILL"), "worker_lost")]
)
def test_a_task_the_worker_killed_is_counted_by_the_main_process_under_its_routed_queue(exception, outcome):
    """What Celery's main process sends when the pool process never reached the end (celery.worker.request): no
    message at hand, so the queue is the one the task is routed to (polls, for a poll batch)."""
    task = current_app.tasks["workloads.cluster_tasks.poll_cluster_batch"]
    labels = {"task": task.name, "queue": "polls", "outcome": outcome}
    before = sample("portal_celery_tasks_total", **labels)
    task_failure.send(sender=task, task_id="t-1", exception=exception)
    assert sample("portal_celery_tasks_total", **labels) == before + 1


def test_an_ordinary_failure_signal_is_not_counted_twice():
    labels = {"task": "tests.metrics.broken", "queue": "celery", "outcome": "failure"}
    before = sample("portal_celery_tasks_total", **labels)
    task_failure.send(sender=broken, task_id="t-2", exception=RuntimeError("x"))  # the postrun counts it
    assert sample("portal_celery_tasks_total", **labels) == before


def test_revoked_and_expired_messages_are_counted_by_queue():
    class Request:
        delivery_info = {"routing_key": "polls"}

    labels = {"task": "tests.metrics.broken", "queue": "polls"}
    before = sample("portal_celery_tasks_total", outcome="expired", **labels)
    task_revoked.send(sender=broken, request=Request(), terminated=False, signum=None, expired=True)
    assert sample("portal_celery_tasks_total", outcome="expired", **labels) == before + 1


# --- Ingest -----------------------------------------------------------------------------------------------------------


@pytest.fixture
def reporter(org, member):
    cluster = ClusterFactory(organization=org)
    _token, key = issue_token(user=member, cluster=cluster, name="head node")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client, f"/api/v1/clusters/{cluster.pk}/jobs/ingest/"


def test_an_accepted_report_counts_its_bytes_and_the_jobs_it_carried(reporter):
    client, url = reporter
    labels = {"endpoint": "cluster-jobs-ingest"}
    before = {
        "reports": sample("portal_ingest_requests_total", outcome="accepted", **labels),
        "bytes": sample("portal_ingest_bytes_total", outcome="accepted", **labels),
        "items": sample("portal_ingest_items_total", **labels),
    }
    table = "\n".join([HEADER, line("1"), line("2"), line("3")]) + "\n"
    response = client.post(f"{url}?timezone=UTC", table, content_type="text/plain")
    assert response.status_code == 200, response.content
    assert sample("portal_ingest_requests_total", outcome="accepted", **labels) == before["reports"] + 1
    assert sample("portal_ingest_bytes_total", outcome="accepted", **labels) == before["bytes"] + len(table.encode())
    assert sample("portal_ingest_items_total", **labels) == before["items"] + 3


def test_a_refused_report_counts_as_refused_with_its_bytes_and_no_items(reporter):
    client, url = reporter
    labels = {"endpoint": "cluster-jobs-ingest"}
    before = sample("portal_ingest_bytes_total", outcome="refused", **labels)
    items = sample("portal_ingest_items_total", **labels)
    table = "\n".join([HEADER, line("1", nnodes="two")]) + "\n"
    assert client.post(f"{url}?timezone=UTC", table, content_type="text/plain").status_code == 400
    assert sample("portal_ingest_bytes_total", outcome="refused", **labels) == before + len(table.encode())
    assert sample("portal_ingest_items_total", **labels) == items


def test_a_script_s_progress_post_counts_its_points_and_a_read_counts_nothing(org, member):
    workload = WorkloadFactory(organization=org)
    client = APIClient()
    client.force_authenticate(member)
    url = f"/api/v1/workloads/{workload.pk}/progress/"
    points = [
        {"iteration": 1, "time": "2026-11-20T00:00:10Z", "tokens_trained": 4_194_304, "step_seconds": 10},
        {"iteration": 2, "time": "2026-11-20T00:00:20Z", "tokens_trained": 8_388_608, "step_seconds": 10},
    ]
    before = sample("portal_ingest_items_total", endpoint="workload-progress")
    reports = sample("portal_ingest_requests_total", endpoint="workload-progress", outcome="accepted")
    assert client.post(url, {"run": "main", "points": points}, format="json").status_code == 200
    assert client.get(url).status_code == 200
    assert sample("portal_ingest_items_total", endpoint="workload-progress") == before + 2
    assert sample("portal_ingest_requests_total", endpoint="workload-progress", outcome="accepted") == reports + 1
