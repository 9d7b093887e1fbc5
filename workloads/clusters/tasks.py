"""Celery tasks for clusters: thin wrappers that pass ids to workloads.clusters.provisioning.

Provisioning and deletion are idempotent (deterministic cloud names, compare-and-set statuses), so
they use acks_late: a worker killed mid-task gets the message redelivered and the rerun is safe.
Transient cloud errors (throttling, 5xx, timeouts) are retried with exponential backoff and jitter,
kept well below the Redis visibility timeout (1 h); permanent ones land on the cluster's status.
Each attempt, retry and outcome is written on the cluster (`last_error`, `retries`, `next_attempt_at`, `running_until`,
and a provisioning attempt's claim with its heartbeat-renewed lease): the page shows it, and the reconciler (beat,
every 15 s, and each worker as it starts) sends again what nothing is working on.
"""

from __future__ import annotations

import logging
import random
from contextlib import nullcontext

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_ready
from django.conf import settings

from portal import queue
from portal.cloud import TransientCloudError
from workloads.clusters import progress, provisioning, reconcile
from workloads.clusters.lifecycle import record_text
from workloads.clusters.models import Cluster
from workloads.usage import tasks as usage_tasks

log = logging.getLogger(__name__)

# Registered under the names they had before clusters/ existed, so beat rows and queued messages still resolve.
NAMES = "workloads.cluster_tasks."

POLL_BATCH_SIZE = 50
MAX_RETRIES = Cluster.MAX_RETRIES
MAX_BACKOFF_SECONDS = 600
# A poll batch holds its clusters for 30 s from its claim (provisioning.claim_clusters_to_poll) and ends within
# them; what it did not reach is polled at a later tick.
POLL_SOFT_LIMIT, POLL_HARD_LIMIT = 25, 30
# Provisioning and deletion: each cloud call gives up inside the soft limit on botocore's own timeouts and retries
# (portal.cloud.session.PROFILES, checked in tests/cloud/test_budget.py), and no call starts that could not end
# before it (portal.cloud.calls), so the task records the failure and retries; the soft limit itself is the backstop.
# The hard limit ends the task for good (and with it its heartbeat, so its lease runs out and the reconciler
# sends it again).
TASK_SOFT_LIMIT = max(settings.CLUSTER_TASK_TIME_LIMIT - 30, 10)
TASK_HARD_LIMIT = settings.CLUSTER_TASK_TIME_LIMIT


def backoff(retries: int) -> float:
    """10 s, 20 s, 40 s … capped at 10 minutes, plus up to 5 s of jitter so retries do not march in step."""
    return min(MAX_BACKOFF_SECONDS, 10 * 2**retries) + random.uniform(0, 5)


def _cluster_task(**options):
    return shared_task(
        bind=True,
        acks_late=True,
        max_retries=None,  # _run counts the failed attempts on the cluster row and gives up after MAX_RETRIES
        soft_time_limit=TASK_SOFT_LIMIT,
        time_limit=TASK_HARD_LIMIT,
        cloud_calls=("task",),  # portal.cloud.worst_case_seconds: each call gives up inside the soft limit
        **options,
    )


def _run(task, cluster_id: int, work, on_give_up, *, claimed: bool):
    """Run one attempt of `work`; a transient failure is recorded on the cluster and retried with backoff, until
    the cluster has failed MAX_RETRIES attempts (counted on the row, so re-sent copies of the task add up).

    A `claimed` attempt (provisioning) holds the cluster's claim while it works and renews its lease with a
    heartbeat (workloads.clusters.progress); `work` gets the claim's token."""
    # The time limit is the hard limit this message carries (set by whoever sent it), else this worker's.
    hard_limit = (task.request.timelimit or (None, None))[0] or TASK_HARD_LIMIT
    claim = None
    if claimed:
        claim = progress.claim(cluster_id, within=hard_limit)
        if claim is None:
            # Another attempt holds a live claim (a duplicate delivery while it runs): it goes on, this one stops.
            exists = Cluster.objects.filter(pk=cluster_id).exists()
            return "busy" if exists else "missing"
    else:
        progress.started(cluster_id, within=hard_limit)
    try:
        with progress.Heartbeat(cluster_id, claim) if claim else nullcontext():
            outcome = work(claim)
    except (TransientCloudError, SoftTimeLimitExceeded) as error:
        message = getattr(error, "message", "") or record_text(progress.TIMED_OUT)
        countdown = backoff(task.request.retries)
        failed = progress.retrying(cluster_id, error=message, countdown=countdown, claim=claim)
        if failed is None:
            return "superseded"  # its lease ran out and the reconciler sent the work again: that copy goes on
        if failed > MAX_RETRIES:
            progress.settled(cluster_id)
            return on_give_up(message)
        raise task.retry(exc=error, countdown=countdown) from error
    progress.settled(cluster_id, claim=claim)
    return outcome


@_cluster_task(name=NAMES + "provision_cluster")
def provision_cluster(self, cluster_id: int) -> str:
    def give_up(message: str) -> str:
        provisioning.fail_after_retries(cluster_id, message)
        return "failed"

    return _run(self, cluster_id, lambda claim: provisioning.provision(cluster_id, claim=claim), give_up, claimed=True)


@_cluster_task(name=NAMES + "delete_cluster")
def delete_cluster(self, cluster_id: int) -> str:
    # Giving up leaves it deleting: the poller asks the cloud again every minute.
    return _run(
        self, cluster_id, lambda claim: provisioning.delete(cluster_id), lambda message: "gave-up", claimed=False
    )


@shared_task(
    name=NAMES + "delete_cloud_cluster",
    bind=True,
    acks_late=True,
    max_retries=MAX_RETRIES,
    soft_time_limit=TASK_SOFT_LIMIT,
    time_limit=TASK_HARD_LIMIT,
    cloud_calls=("task",),
)
def delete_cloud_cluster(self, cluster_id: int, cloud_name: str) -> str:
    """Remove a failed attempt's leftover cloud cluster after a retry picked a new name."""
    try:
        return provisioning.delete(cluster_id, cloud_name=cloud_name)
    except (TransientCloudError, SoftTimeLimitExceeded) as error:
        if self.request.retries >= self.max_retries:
            return "gave-up"
        raise self.retry(exc=error, countdown=backoff(self.request.retries)) from error


@shared_task(name=NAMES + "poll_clusters")
def poll_clusters() -> int:
    """Beat, about every minute: one batch message per POLL_BATCH_SIZE clusters due (not one task per cluster).
    A message names no cluster: the worker that takes it claims its batch as it starts
    (provisioning.claim_clusters_to_poll), so a cluster is never in two batches at once, any number of workers
    share a cycle, and a message that waited claims what is due when it runs (or nothing, and ends at once)."""
    due = provisioning.count_clusters_to_poll()
    for _batch in range(-(-due // POLL_BATCH_SIZE)):
        # Unstarted by the next tick, a message is dropped: that tick sends what is due then.
        poll_cluster_batch.apply_async(expires=settings.CELERY_BEAT_SCHEDULE["poll-clusters"]["schedule"])
    return due


@shared_task(
    name=NAMES + "poll_cluster_batch",
    soft_time_limit=POLL_SOFT_LIMIT,
    time_limit=POLL_HARD_LIMIT,
    cloud_calls=("poll",),
)
def poll_cluster_batch(cluster_ids: list[int] | None = None) -> dict[str, int]:
    """Claim a batch of clusters due and poll them. `cluster_ids`: those, already claimed (a message sent by the
    version before, which claimed at fan-out)."""
    if cluster_ids is None:
        cluster_ids = provisioning.claim_clusters_to_poll(limit=POLL_BATCH_SIZE)
    if not cluster_ids:
        return {"polled": 0, "errors": 0, "skipped": 0}
    # A poll is a read plus an idempotent sync; one that fails is simply repeated by the next tick.
    try:
        outcome = provisioning.poll_clusters(cluster_ids)
    except SoftTimeLimitExceeded:
        log.warning("poll batch of %s clusters stopped at its time limit; the next tick goes on", len(cluster_ids))
        return {"polled": 0, "errors": 0, "skipped": len(cluster_ids)}
    if outcome["polled"]:
        usage_tasks.roll_up.delay()  # the running time of what was just seen, into the daily rollups
    return outcome


@worker_ready.connect(dispatch_uid="reconcile-as-a-worker-starts")
def reconcile_as_a_worker_starts(sender=None, **kwargs) -> None:
    """A worker that starts — after a kill, or after its broker came back (kombu's worker exits on reconnect and
    its supervisor starts it again) — has the reconciler run at once rather than at beat's next turn: work refused
    by the broker while it was down is sent as soon as a worker is there to take it."""
    queue.send(reconcile_clusters)


@shared_task(name="workloads.clusters.reconcile")
def reconcile_clusters() -> list[int]:
    """Beat, every 15 s: send provisioning again where its message was lost (workloads.clusters.reconcile).
    The copies expire unsent after a few queue waits, so a long outage does not pile them up."""
    ids = reconcile.claim_late_clusters()
    for cluster_id in ids:
        queue.send(provision_cluster, cluster_id, expires=settings.CLUSTER_QUEUE_WAIT * 5)
    return ids
