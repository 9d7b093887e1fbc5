"""What the worker is doing about a cluster, written where the page, the API and the reconciler read it:
the last transient error, how many attempts failed, when the next is due (`next_attempt_at`) and, while one runs,
the time limit it ends by (`running_until`)."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext_noop

from workloads.clusters.models import Cluster

TIMED_OUT = gettext_noop(
    "The attempt did not finish within the task's time limit (no answer from AWS, or the worker stopped)"
)


def started(cluster_id: int, *, within: float) -> None:
    """A task took the cluster up: it is done (or retrying) within `within` seconds, or it died."""
    Cluster.objects.filter(pk=cluster_id).update(
        running_until=timezone.now() + timedelta(seconds=within), next_attempt_at=None
    )


def retrying(cluster_id: int, *, error: str, countdown: float) -> int:
    """An attempt failed transiently and the next is due in `countdown` seconds: count it, across re-sent copies
    of the task too (each starts its own Celery retry count at 0). Returns the failed attempts so far."""
    Cluster.objects.filter(pk=cluster_id).update(
        last_error=error[:500],
        retries=F("retries") + 1,
        running_until=None,
        next_attempt_at=timezone.now() + timedelta(seconds=countdown),
    )
    return Cluster.objects.filter(pk=cluster_id).values_list("retries", flat=True).first() or 0


def settled(cluster_id: int) -> None:
    """The attempt ended (done, failed for good, or nothing to do): the poller follows the cluster from here."""
    Cluster.objects.filter(pk=cluster_id).update(last_error="", retries=0, next_attempt_at=None, running_until=None)
