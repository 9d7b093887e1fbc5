"""What the worker is doing about a cluster, written where the page, the API and the reconciler read it:
the last transient error, how many attempts failed, when the next is due (`next_attempt_at`) and, while one runs,
the time limit it ends by (`running_until`).

A provisioning attempt also holds the cluster's claim: a token of its own and a short lease (`lease_until`,
CLUSTER_LEASE_SECONDS) that a heartbeat thread renews every CLUSTER_HEARTBEAT_SECONDS while the attempt works.
Every write of the attempt is a compare-and-set on its token, so an attempt that lost its claim (the reconciler
sent the work again after its lease ran out) can neither renew nor overwrite the claim of the copy that took over.
A deletion holds no claim (the poller finishes what it leaves), so it never clears a provisioning attempt's.
"""

from __future__ import annotations

import logging
import threading
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, connections
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext_noop

from workloads.clusters.models import Cluster

log = logging.getLogger(__name__)

TIMED_OUT = gettext_noop(
    "The attempt did not finish within the task's time limit (no answer from AWS, or the worker stopped)"
)
STOPPED_ANSWERING = gettext_noop(
    "The attempt stopped answering (its worker was stopped, or lost the database) before it finished"
)
# The claim fields an attempt clears when it ends; a deletion's progress writes leave them alone.
RELEASED = {"claim": "", "lease_until": None}


def live_claim(now) -> Q:
    """Rows a provisioning attempt holds right now: its lease has not run out."""
    return ~Q(claim="") & Q(lease_until__gte=now)


def started(cluster_id: int, *, within: float) -> None:
    """A deletion took the cluster up: it is done (or retrying) within `within` seconds, or it died."""
    Cluster.objects.filter(pk=cluster_id).update(
        running_until=timezone.now() + timedelta(seconds=within), next_attempt_at=None
    )


def claim(cluster_id: int, *, within: float) -> str | None:
    """A provisioning attempt takes the cluster up, unless another holds a live claim (a duplicate delivery while
    that one runs: this copy does nothing, and if that one dies its lease runs out and the reconciler sends the
    work again). Returns the attempt's token, or None."""
    token = uuid.uuid4().hex
    now = timezone.now()
    taken = (
        Cluster.objects.filter(pk=cluster_id)
        .exclude(live_claim(now))
        .update(
            claim=token,
            heartbeat_at=now,
            lease_until=now + timedelta(seconds=settings.CLUSTER_LEASE_SECONDS),
            running_until=now + timedelta(seconds=within),
            next_attempt_at=None,
        )
    )
    return token if taken else None


def renew(cluster_id: int, *, claim: str) -> bool:
    """The heartbeat: False once the attempt no longer holds the claim."""
    now = timezone.now()
    return bool(
        Cluster.objects.filter(pk=cluster_id, claim=claim).update(
            heartbeat_at=now, lease_until=now + timedelta(seconds=settings.CLUSTER_LEASE_SECONDS)
        )
    )


def retrying(cluster_id: int, *, error: str, countdown: float, claim: str | None = None) -> int | None:
    """An attempt failed transiently and the next is due in `countdown` seconds: count it, across re-sent copies
    of the task too (each starts its own Celery retry count at 0). Returns the failed attempts so far, or None when
    the attempt had lost its claim: the copy that took over goes on, this one must not schedule its own retry."""
    rows = Cluster.objects.filter(pk=cluster_id)
    if claim is not None:
        rows = rows.filter(claim=claim)
    changed = rows.update(
        last_error=error[:500],
        retries=F("retries") + 1,
        running_until=None,
        next_attempt_at=timezone.now() + timedelta(seconds=countdown),
        **(RELEASED if claim is not None else {}),
    )
    if not changed:
        return None
    return Cluster.objects.filter(pk=cluster_id).values_list("retries", flat=True).first() or 0


def settled(cluster_id: int, *, claim: str | None = None) -> None:
    """The attempt ended (done, failed for good, or nothing to do): the poller follows the cluster from here.
    With `claim`, only if the attempt still holds it (and the claim is released)."""
    rows = Cluster.objects.filter(pk=cluster_id)
    if claim is not None:
        rows = rows.filter(claim=claim)
    rows.update(
        last_error="",
        retries=0,
        next_attempt_at=None,
        running_until=None,
        **(RELEASED if claim is not None else {}),
    )


class Heartbeat:
    """Renews a running attempt's lease from a thread of its own, so the lease can stay short (a killed worker's
    cluster is sent again within it) while one slow cloud call may take most of the task's time limit. The thread
    dies with its process: a worker killed -9, or a task killed at its hard time limit, stops renewing."""

    def __init__(self, cluster_id: int, claim: str):
        self.cluster_id, self.claim = cluster_id, claim
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, name=f"cluster-{cluster_id}-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(timeout=10)

    def run(self) -> None:
        try:
            while not self.stop.wait(settings.CLUSTER_HEARTBEAT_SECONDS):
                try:
                    if not renew(self.cluster_id, claim=self.claim):
                        log.warning(
                            "cluster %s: this attempt lost its claim (its lease ran out and the work was sent again)",
                            self.cluster_id,
                        )
                        return
                except DatabaseError as error:
                    # The lease covers the next heartbeats: a database blip shorter than that loses nothing.
                    log.warning("cluster %s: heartbeat not recorded (%s)", self.cluster_id, error)
        finally:
            connections.close_all()  # this thread's own connections only
