"""What the worker is doing about a cluster, written where the page, the API and the reconciler read it:
the last transient error, how many retries it has cost, and when the worker next acts (`next_attempt_at`)."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from django.utils.translation import gettext_noop

from workloads.clusters.models import Cluster

TIMED_OUT = gettext_noop(
    "The attempt did not finish within the task's time limit (no answer from AWS, or the worker stopped)"
)


def started(cluster_id: int, *, within: float) -> None:
    """A task took the cluster up: it is done (or retrying) within `within` seconds, or it died."""
    Cluster.objects.filter(pk=cluster_id).update(next_attempt_at=timezone.now() + timedelta(seconds=within))


def retrying(cluster_id: int, *, error: str, retries: int, countdown: float) -> None:
    Cluster.objects.filter(pk=cluster_id).update(
        last_error=error[:500], retries=retries, next_attempt_at=timezone.now() + timedelta(seconds=countdown)
    )


def settled(cluster_id: int) -> None:
    """The attempt ended (done, failed for good, or nothing to do): the poller follows the cluster from here."""
    Cluster.objects.filter(pk=cluster_id).update(last_error="", retries=0, next_attempt_at=None)
