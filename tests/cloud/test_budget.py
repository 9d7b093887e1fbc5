"""A cloud call gives up inside its task's soft time limit, on botocore's own timeouts and retry budget, and the task
records the failure itself. The arithmetic is checked against the real profiles and task limits;
the behaviour against real sockets: an endpoint that accepts and never answers, and one that refuses."""

import signal
import threading
import time
from contextlib import contextmanager

import pytest
from celery.contrib.testing.worker import start_worker
from celery.exceptions import SoftTimeLimitExceeded

from portal import cloud
from portal.celery import app
from portal.cloud import AccountAccess, calls, session
from portal.cloud.session import session_for
from tests.cloud.conftest import ROLE_ARN
from tests.clusters.test_worker_integration import broker, wait_for
from tests.factories import ClusterFactory, OrganizationFactory
from workloads.clusters import progress, provisioning
from workloads.clusters import tasks as cluster_tasks
from workloads.clusters.lifecycle import record_text
from workloads.health import tasks as health_tasks
from workloads.models import CloudCallTally, Cluster
from workloads.usage import tasks as usage_tasks

# Every task that calls AWS (or Prometheus). A new one belongs here and declares `cloud_calls` on its decorator.
CLOUD_TASKS = {
    cluster_tasks.provision_cluster,
    cluster_tasks.delete_cluster,
    cluster_tasks.delete_cloud_cluster,
    cluster_tasks.poll_cluster_batch,
    usage_tasks.fetch_billed_costs,
    health_tasks.poll_gpu_telemetry,
}


def test_one_call_of_each_kind_a_task_makes_ends_inside_its_soft_limit():
    """The relation the soft limit depends on: (connect + read timeout) × attempts + the longest backoffs fits under
    the soft limit of every task making such calls, with room left to record the failure."""
    declared = {task for task in app.tasks.values() if getattr(task, "cloud_calls", None)}
    assert declared >= CLOUD_TASKS
    for task in declared:
        assert task.soft_time_limit and task.time_limit > task.soft_time_limit, task.name
        for kind in task.cloud_calls:
            worst = cloud.worst_case_seconds(kind)
            assert worst <= task.soft_time_limit - calls.RECORD_MARGIN_SECONDS, (task.name, kind, worst)


def test_the_worst_case_is_what_botocore_is_configured_with():
    config = session.client_config("task")
    profile = session.PROFILES["task"]
    assert (config.connect_timeout, config.read_timeout) == (profile["connect_timeout"], profile["read_timeout"])
    assert config.retries == profile["retries"]
    # 3 attempts of 5 + 30 s, and at most 1 + 5 then 2 + 5 s of backoff between them.
    assert session.worst_case_seconds("task") == 3 * 35 + 6 + 7
    assert cloud.worst_case_seconds("prometheus") == 20


def test_botocore_makes_exactly_the_attempts_the_profile_allows(refusing_endpoint, quick_profiles):
    quick_profiles("task", attempts=3)
    sent = []
    access = AccountAccess(role_arn=ROLE_ARN, external_id="", region="us-east-1")
    base_register = calls.watch

    def counting_watch(events, **kwargs):
        events.register("before-send", lambda **kw: sent.append(kw["event_name"]))
        base_register(events, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(calls, "watch", counting_watch)
        with pytest.raises(cloud.TransientCloudError, match="Could not connect"):
            session_for(access)
    assert sent == ["before-send.sts.AssumeRole"] * 3


def test_the_soft_time_limit_ends_a_hung_call_at_once_instead_of_being_retried(black_hole, quick_profiles):
    """Seen in every poll batch during a black-hole: botocore wrapped Celery's SoftTimeLimitExceeded (raised inside
    the socket read) in an HTTPClientError, took it for a network error and retried, so the call went on to the hard
    limit. Here the soft limit arrives while the first of 3 attempts of 10 s waits for its answer."""
    quick_profiles("task", connect=1, read=10, attempts=3)
    with soft_limit_when(lambda: black_hole.connections == 1), pytest.raises(SoftTimeLimitExceeded):
        session_for(AccountAccess(role_arn=ROLE_ARN, external_id="", region="us-east-1"))
    assert black_hole.connections == 1  # not retried
    [tally] = calls.drain()
    assert (tally.service, tally.failures, tally.last_failure) == ("sts", 1, "stopped at the task's time limit")


@contextmanager
def soft_limit_when(condition):
    """Deliver a soft time limit the way Celery's pool does (a signal the main thread handles, raising
    SoftTimeLimitExceeded wherever it is), once `condition` holds: here, once the call waits on its socket."""

    def raise_soft_limit(signum, frame):
        raise SoftTimeLimitExceeded()

    def deliver():
        deadline = time.monotonic() + 20
        while not condition() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGUSR1)

    previous = signal.signal(signal.SIGUSR1, raise_soft_limit)
    thread = threading.Thread(target=deliver, daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join()
        signal.signal(signal.SIGUSR1, previous)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("catalog")
@pytest.mark.parametrize(
    ("endpoint", "words", "failure"),
    [
        ("black_hole", "AWS did not answer in time", "timeout"),
        ("refusing_endpoint", "Could not connect to the endpoint URL", "no connection (refused or unreachable)"),
    ],
)
def test_a_provisioning_attempt_against_a_hanging_or_refusing_endpoint_records_its_failure(
    request, endpoint, words, failure, quick_profiles, tmp_path
):
    """Through a real worker: the attempt ends on botocore's timeouts and retries, and the task writes the failure and
    the next attempt on the cluster (what the page shows) — not the time-limit message a killed attempt leaves."""
    request.getfixturevalue(endpoint)
    cluster = ClusterFactory(status=Cluster.Status.REQUESTED)
    with (
        broker(tmp_path),
        start_worker(app, pool="solo", perform_ping_check=False, loglevel="WARNING", queues=["celery"]),
    ):
        cluster_tasks.provision_cluster.delay(cluster.pk)
        wait_for(Cluster.objects.filter(pk=cluster.pk, retries=1).exists, "the failed attempt recorded")
        # Written after the task ends (one row per endpoint and minute, not one per call).
        wait_for(CloudCallTally.objects.filter(service="sts", failures__gte=1).exists, "the endpoint's failure")
    cluster.refresh_from_db()
    assert cluster.status == Cluster.Status.PROVISIONING
    assert words in cluster.last_error
    assert cluster.last_error != record_text(progress.TIMED_OUT)
    assert cluster.next_attempt_at is not None and cluster.running_until is None
    tally = CloudCallTally.objects.get(service="sts")
    assert (tally.account, tally.region, tally.last_failure) == (cluster.organization.aws_account_id, "us-east-1",
                                                                 failure)  # fmt: skip


@pytest.mark.django_db
@pytest.mark.parametrize("endpoint", ["black_hole", "refusing_endpoint"])
def test_a_poll_batch_against_a_hanging_or_refusing_endpoint_ends_with_its_error_counted(
    request, endpoint, quick_profiles
):
    request.getfixturevalue(endpoint)
    cluster = ClusterFactory()
    outcome = cluster_tasks.poll_cluster_batch.apply(args=[[cluster.pk]]).get()
    # Not {"skipped": 1}: what the batch answers when its soft time limit stopped it.
    assert outcome == {"polled": 0, "errors": 1, "skipped": 0}
    assert CloudCallTally.objects.filter(service="sts", failures=1).exists()  # written after the task


@pytest.mark.django_db
def test_no_call_starts_that_could_not_end_before_the_task_deadline(black_hole, quick_profiles):
    """A batch over two accounts: the first account's call waits out its read timeout; the second would not end in
    the time left, so it is not sent, and the batch ends with both errors counted instead of at its soft limit."""
    quick_profiles("poll", connect=1, read=4, attempts=1)  # an attempt may last 5 s; the first lasts at least 4
    clusters = [ClusterFactory(organization=OrganizationFactory()) for _ in range(2)]
    with calls.time_budget(7):
        outcome = provisioning.poll_clusters([c.pk for c in clusters])
    assert outcome == {"polled": 0, "errors": 2, "skipped": 0}
    assert black_hole.connections == 1
    assert [t.failures for t in calls.drain()] == [1]  # the call not sent is no failure of the endpoint


def test_a_budget_shorter_than_one_attempt_still_lets_calls_start_while_half_of_it_is_left():
    """CLUSTER_TASK_TIME_LIMIT of 20 s leaves a 5 s budget, shorter than one "task" attempt (35 s): refusing would
    fail every call, so calls start while half the budget is left and the soft limit ends one that hangs."""
    with calls.time_budget(10):
        calls.ensure_time_for(35, what="a call")
    with calls.time_budget(0), pytest.raises(calls.OutOfTime, match="Not started: a call may take up to 35 s"):
        calls.ensure_time_for(35, what="a call")
