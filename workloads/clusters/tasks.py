"""Celery tasks for clusters: thin wrappers that pass ids to workloads.clusters.provisioning.

Provisioning and deletion are idempotent (deterministic cloud names, compare-and-set statuses), so
they use acks_late: a worker killed mid-task gets the message redelivered and the rerun is safe.
Transient cloud errors (throttling, 5xx, timeouts) are retried with exponential backoff and jitter,
kept well below the Redis visibility timeout (1 h); permanent ones land on the cluster's status.
"""

from __future__ import annotations

import random

from celery import shared_task

from portal.cloud import TransientCloudError
from workloads.clusters import provisioning
from workloads.usage import tasks as usage_tasks

# Registered under the names they had before clusters/ existed, so beat rows and queued messages still resolve.
NAMES = "workloads.cluster_tasks."

POLL_BATCH_SIZE = 50
MAX_RETRIES = 8
MAX_BACKOFF_SECONDS = 600


def backoff(retries: int) -> float:
    """10 s, 20 s, 40 s … capped at 10 minutes, plus up to 5 s of jitter so retries do not march in step."""
    return min(MAX_BACKOFF_SECONDS, 10 * 2**retries) + random.uniform(0, 5)


@shared_task(name=NAMES + "provision_cluster", bind=True, acks_late=True, max_retries=MAX_RETRIES)
def provision_cluster(self, cluster_id: int) -> str:
    try:
        return provisioning.provision(cluster_id)
    except TransientCloudError as error:
        if self.request.retries >= self.max_retries:
            provisioning.fail_after_retries(cluster_id, error.message)
            return "failed"
        raise self.retry(exc=error, countdown=backoff(self.request.retries)) from error


@shared_task(name=NAMES + "delete_cluster", bind=True, acks_late=True, max_retries=MAX_RETRIES)
def delete_cluster(self, cluster_id: int) -> str:
    try:
        return provisioning.delete(cluster_id)
    except TransientCloudError as error:
        if self.request.retries >= self.max_retries:
            return "gave-up"  # still deleting: the poller asks the cloud again every minute
        raise self.retry(exc=error, countdown=backoff(self.request.retries)) from error


@shared_task(name=NAMES + "delete_cloud_cluster", bind=True, acks_late=True, max_retries=MAX_RETRIES)
def delete_cloud_cluster(self, cluster_id: int, cloud_name: str) -> str:
    """Remove a failed attempt's leftover cloud cluster after a retry picked a new name."""
    try:
        return provisioning.delete(cluster_id, cloud_name=cloud_name)
    except TransientCloudError as error:
        if self.request.retries >= self.max_retries:
            return "gave-up"
        raise self.retry(exc=error, countdown=backoff(self.request.retries)) from error


@shared_task(name=NAMES + "poll_clusters")
def poll_clusters() -> int:
    """Beat, about every minute: fan the clusters to poll out in batches (not one task per cluster)."""
    ids = provisioning.cluster_ids_to_poll()
    for start in range(0, len(ids), POLL_BATCH_SIZE):
        poll_cluster_batch.delay(ids[start : start + POLL_BATCH_SIZE])
    return len(ids)


@shared_task(name=NAMES + "poll_cluster_batch")
def poll_cluster_batch(cluster_ids: list[int]) -> dict[str, int]:
    # A poll is a read plus an idempotent sync; one that fails is simply repeated by the next tick.
    outcome = provisioning.poll_clusters(cluster_ids)
    if outcome["polled"]:
        usage_tasks.roll_up.delay()  # the running time of what was just seen, into the daily rollups
    return outcome
