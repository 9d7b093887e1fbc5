"""The clusters' reconciler: provisioning whose task was lost is sent again (by tasks.reconcile_clusters).

A provisioning message can be lost between the committed row and the worker — a worker killed mid-task (Redis
gives the message back only after its one-hour visibility timeout; the embedded filesystem broker never does),
a broker that was down when the request committed. The row is the record of the work, so beat runs this every
minute: a cluster still `requested`, or `provisioning` with nothing recorded from the cloud, whose worker is
late — past `running_until` (a running attempt's time limit), `next_attempt_at` (a retry's due time) or, when
neither is set, its last status change plus the time queued work may wait — by more than a grace, gets its task
again.

Safe because provisioning is idempotent: the cloud cluster has a deterministic name, so a re-sent task adopts
the one an earlier run created (and records its cloud id) instead of making a second. Deletion needs nothing
here: `deleting` clusters are polled, and the poll asks the cloud to delete again (provisioning.poll_one).
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import DateTimeField, ExpressionWrapper, F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from workloads.clusters.lifecycle import record_text
from workloads.clusters.models import Cluster
from workloads.clusters.progress import TIMED_OUT, settled
from workloads.clusters.provisioning import fail_after_retries

Status = Cluster.Status


def late_clusters(now=None):
    """Clusters whose provisioning nothing is known to be working on."""
    now = now or timezone.now()
    waited = timedelta(seconds=settings.CLUSTER_QUEUE_WAIT)
    due = Coalesce(
        "running_until",
        "next_attempt_at",
        ExpressionWrapper(F("status_changed_at") + waited, output_field=DateTimeField()),
    )
    unstarted = Q(status=Status.REQUESTED) | Q(status=Status.PROVISIONING, cloud_id="")
    return (
        Cluster.objects.filter(unstarted)
        .alias(due=due)
        .filter(due__lt=now - timedelta(seconds=settings.RECONCILE_GRACE))
        .order_by("pk")
    )


def claim_late_clusters(*, limit: int = 200) -> list[int]:
    """The late clusters' ids, each marked as expected again within the queue wait, so the next minute's run
    does not send it twice while the message waits. The caller (the beat task) sends their provisioning.

    A cluster whose running attempt outlived its lease (`running_until`: the worker died, or the task hit its
    hard time limit on a cloud endpoint that never answered) has that counted as a failed attempt, shown on its
    page; past the retries it fails with the message, like a task that gave up. Work that never started — a lost
    message, a worker that was down, a queue backed up — is sent again without counting."""
    now = timezone.now()
    with transaction.atomic():
        late = list(
            late_clusters(now).select_for_update(skip_locked=True).values_list("pk", "running_until", "retries")[:limit]
        )
        resend = []
        for cluster_id, running_until, retries in late:
            if running_until is not None:
                if retries >= Cluster.MAX_RETRIES:
                    settled(cluster_id)
                    fail_after_retries(cluster_id, record_text(TIMED_OUT))
                    continue
                Cluster.objects.filter(pk=cluster_id).update(last_error=record_text(TIMED_OUT), retries=retries + 1)
            resend.append(cluster_id)
        Cluster.objects.filter(pk__in=resend).update(
            running_until=None, next_attempt_at=now + timedelta(seconds=settings.CLUSTER_QUEUE_WAIT)
        )
    return resend
