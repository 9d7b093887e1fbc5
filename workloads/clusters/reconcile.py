"""The clusters' reconciler: provisioning whose task was lost is sent again (by tasks.reconcile_clusters).

A provisioning message can be lost between the committed row and the worker — a worker killed mid-task (Redis
gives the message back only after its one-hour visibility timeout; the embedded filesystem broker never does),
a broker that was down when the request committed. The row is the record of the work, so beat runs this every
15 s (and each worker as it starts): a cluster still `requested`, or `provisioning` with nothing recorded from the
cloud, whose worker is late gets its task again. Late means: a running attempt whose lease ran out (`lease_until`:
its heartbeat renews it every 15 s while it works, so a killed worker is noticed within the 45 s lease, not the
task's time limit), or that ran past its time limit (`running_until`) by more than a grace; or queued work past
`next_attempt_at` (a retry's due time, or at once when the broker refused its message) or, when none is set, its
last status change plus the time queued work may wait, by the grace.

Safe because provisioning is idempotent: the cloud cluster has a deterministic name, so a re-sent task adopts
the one an earlier run created (and records its cloud id) instead of making a second. Deletion needs nothing
here: `deleting` clusters are polled, and the poll asks the cloud to delete again (provisioning.ask).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import DateTimeField, ExpressionWrapper, F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from workloads.clusters.lifecycle import record_text
from workloads.clusters.models import Cluster
from workloads.clusters.progress import RELEASED, STOPPED_ANSWERING, TIMED_OUT, settled
from workloads.clusters.provisioning import fail_after_retries

log = logging.getLogger(__name__)
Status = Cluster.Status
# Provisioning the reconciler may have to send again: not started, or started with nothing recorded from the cloud.
UNSTARTED = Q(status=Status.REQUESTED) | Q(status=Status.PROVISIONING, cloud_id="")


def late_clusters(now=None):
    """Clusters whose provisioning nothing is known to be working on."""
    now = now or timezone.now()
    grace = timedelta(seconds=settings.RECONCILE_GRACE)
    waited = timedelta(seconds=settings.CLUSTER_QUEUE_WAIT)
    queued_due = Coalesce(
        "next_attempt_at", ExpressionWrapper(F("status_changed_at") + waited, output_field=DateTimeField())
    )
    late = (
        # A running attempt's heartbeat stopped: its worker was killed or lost the database. The lease is the
        # grace: it outlasts three heartbeats.
        Q(lease_until__lt=now)
        # Or it ran past its time limit (a worker from before leases; a pool that cannot kill a task at its limit).
        | Q(running_until__lt=now - grace)
        # Or queued work (a retry's due time, or a new request) no worker took up.
        | Q(lease_until__isnull=True, running_until__isnull=True, queued_due__lt=now - grace)
    )
    return Cluster.objects.filter(UNSTARTED).alias(queued_due=queued_due).filter(late).order_by("pk")


def never_sent(cluster_id: int) -> None:
    """The provisioning message was refused by the broker: the work is due at the reconciler's first run once the
    broker takes messages again, not a queue wait later. The grace covers a message waiting in a queue; there is
    none, so the due time is set back by it."""
    due = timezone.now() - timedelta(seconds=settings.RECONCILE_GRACE)
    Cluster.objects.filter(UNSTARTED, pk=cluster_id, lease_until__isnull=True).update(next_attempt_at=due)


def claim_late_clusters(*, limit: int = 200) -> list[int]:
    """The late clusters' ids, each marked as expected again within the queue wait, so the next minute's run
    does not send it twice while the message waits. The caller (the beat task) sends their provisioning.

    A cluster whose running attempt stopped renewing its lease (`lease_until`: the worker was killed, or lost the
    database) or outlived its time limit (`running_until`) has that counted as a failed attempt, shown on its page;
    past the retries it fails with the message, like a task that gave up. Its claim is cleared, so the stale attempt,
    should it come back, can neither renew it nor write over the copy sent now. Work that never started — a lost
    message, a worker that was down, a queue backed up — is sent again without counting."""
    now = timezone.now()
    grace = timedelta(seconds=settings.RECONCILE_GRACE)
    with transaction.atomic():
        late = list(
            late_clusters(now)
            .select_for_update(skip_locked=True)
            .values_list("pk", "lease_until", "running_until", "retries")[:limit]
        )
        resend = []
        for cluster_id, lease_until, running_until, retries in late:
            if running_until is not None and running_until < now - grace:
                why = TIMED_OUT
            elif lease_until is not None:
                why = STOPPED_ANSWERING
            else:
                why = None
            if why is not None:
                log.warning("cluster %s: %s; sending it again (failed attempt %s)", cluster_id, why, retries + 1)
                if retries >= Cluster.MAX_RETRIES:
                    Cluster.objects.filter(pk=cluster_id).update(**RELEASED)
                    settled(cluster_id)
                    fail_after_retries(cluster_id, record_text(why))
                    continue
                Cluster.objects.filter(pk=cluster_id).update(last_error=record_text(why), retries=retries + 1)
            resend.append(cluster_id)
        Cluster.objects.filter(pk__in=resend).update(
            running_until=None, next_attempt_at=now + timedelta(seconds=settings.CLUSTER_QUEUE_WAIT), **RELEASED
        )
    return resend


@dataclass(frozen=True)
class StalledAttempt:
    """A provisioning attempt that stopped answering, not yet sent again: what the page and the API say."""

    stopped_answering_at: datetime  # its last heartbeat
    retry_by: datetime  # the reconciler's first run after its lease ran out, at the latest
    overdue: bool  # retry_by has passed: the reconciler (beat) is not running


def stalled_attempt(cluster: Cluster, now: datetime | None = None) -> StalledAttempt | None:
    """The cluster's provisioning attempt, if its lease ran out and the reconciler has not sent it again yet (it
    will at its next run: late_clusters). Read from the row alone, so a list can show it without a query."""
    now = now or timezone.now()
    unstarted = cluster.status == Status.REQUESTED or (cluster.status == Status.PROVISIONING and not cluster.cloud_id)
    if not unstarted or not cluster.claim or cluster.lease_until is None or cluster.lease_until >= now:
        return None
    stopped = cluster.heartbeat_at or cluster.lease_until - timedelta(seconds=settings.CLUSTER_LEASE_SECONDS)
    retry_by = cluster.lease_until + timedelta(seconds=reconcile_every())
    return StalledAttempt(stopped_answering_at=stopped, retry_by=retry_by, overdue=retry_by < now)


def reconcile_every() -> float:
    """Seconds between the reconciler's runs (beat's schedule)."""
    return float(settings.CELERY_BEAT_SCHEDULE["reconcile-clusters"]["schedule"])
