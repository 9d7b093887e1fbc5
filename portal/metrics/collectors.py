"""What the database and the broker say, read when Prometheus scrapes (in the one process answering /metrics).

Gauges computed here are never written to prometheus_client's multiprocess files: a figure read from the database
is the same whichever process reads it, and summing it over processes would be wrong. Each group of figures is read
on its own; a group whose query fails is left out of that scrape (and logged) rather than failing the others, so
`portal_database_up 0` still reaches Prometheus when the database is away.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from datetime import datetime

from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import Count, Min, Q
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily

from portal.checks import broker_state, database_state, queue_depths
from workloads.clusters.models import Cluster
from workloads.clusters.progress import live_claim
from workloads.clusters.reconcile import late_clusters
from workloads.clusters.tasks import MAX_BACKOFF_SECONDS
from workloads.operations import health
from workloads.reporting.ingest import TAKES_REPORTS
from workloads.usage.models import UsageDirtyDay

log = logging.getLogger(__name__)
Status = Cluster.Status
TRANSITIONAL = (Status.REQUESTED, Status.PROVISIONING, Status.DELETING)
# The cloud's own part of creating or deleting a cluster, beyond the portal's tasks: ParallelCluster's head node
# may bootstrap for 30 min, a new FSx for Lustre file system takes 10-20 more, HyperPod's instance groups as long.
CLOUD_ALLOWANCE_SECONDS = 2 * 3600


def state_budgets() -> dict[str, float]:
    """How long a cluster may stay in each transitional state before it is stuck: every attempt the portal makes
    before it gives up (Cluster.MAX_RETRIES retries, each waiting in the queue, late by the reconciler's grace, running
    to its time limit, then backing off) — plus, once the cloud works on it, the cloud's own time."""
    attempts = Cluster.MAX_RETRIES + 1
    each = settings.CLUSTER_QUEUE_WAIT + settings.RECONCILE_GRACE + settings.CLUSTER_TASK_TIME_LIMIT
    backoffs = sum(min(MAX_BACKOFF_SECONDS, 10 * 2**retry) + 5 for retry in range(Cluster.MAX_RETRIES))
    portal = attempts * each + backoffs
    return {
        Status.REQUESTED: portal,
        Status.PROVISIONING: portal + CLOUD_ALLOWANCE_SECONDS,
        Status.DELETING: portal + CLOUD_ALLOWANCE_SECONDS,
    }


def _gauge(name: str, documentation: str, labels: list[str] | None = None) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, labels=labels)


def connectivity() -> Iterator[GaugeMetricFamily]:
    database_up = database_state() == "ok"
    broker_up = broker_state() == "ok"
    up = _gauge("portal_database_up", "1 when the database answers a query from the web process, else 0.")
    up.add_metric([], 1 if database_up else 0)
    yield up
    up = _gauge("portal_broker_up", "1 when the Celery broker (Redis) takes a connection from web, else 0.")
    up.add_metric([], 1 if broker_up else 0)
    yield up
    if broker_up:
        waiting = _gauge("portal_queue_messages", "Messages waiting in each Celery queue (broker's count).", ["queue"])
        for queue, depth in queue_depths().items():
            if isinstance(depth, int):  # "unknown: …" when the broker stopped answering meanwhile
                waiting.add_metric([queue], depth)
        yield waiting


def workers(now: datetime) -> Iterator[GaugeMetricFamily]:
    """Each queue's heartbeat (beat sends one every 30 s; workloads.operations): a worker takes the queue's work."""
    states = health.queue_states(now)
    up = _gauge(
        "portal_queue_worker_up",
        f"1 when a worker ran the queue's heartbeat within {health.STALE_AFTER_SECONDS} s, else 0 (never, or late).",
        ["queue"],
    )
    age = _gauge("portal_queue_heartbeat_age_seconds", "Seconds since a worker last ran the heartbeat.", ["queue"])
    waited = _gauge(
        "portal_queue_heartbeat_wait_seconds", "How long the queue's last heartbeat waited for a worker.", ["queue"]
    )
    for queue, state in states.items():
        up.add_metric([queue], 1 if state["state"] == "ok" else 0)
        if "last_heartbeat_seconds_ago" in state:
            age.add_metric([queue], state["last_heartbeat_seconds_ago"])
            waited.add_metric([queue], state["heartbeat_waited_seconds"])
    yield from (up, age, waited)


def clusters(now: datetime) -> Iterator[GaugeMetricFamily]:
    counts = dict(Cluster.objects.order_by().values_list("status").annotate(n=Count("pk")).values_list("status", "n"))
    by_state = _gauge("portal_clusters", "Clusters in each state (every organization's).", ["state"])
    for state in Status.values:
        by_state.add_metric([state], counts.get(state, 0))
    yield by_state

    transitional = Cluster.objects.filter(status__in=TRANSITIONAL).order_by().values_list("status")
    oldest = dict(transitional.annotate(oldest=Min("status_changed_at")).values_list("status", "oldest"))
    age = _gauge(
        "portal_cluster_oldest_seconds",
        "Seconds the longest-waiting cluster has been in each transitional state; 0 when none is.",
        ["state"],
    )
    budget = _gauge(
        "portal_cluster_budget_seconds",
        "How long a cluster may stay in each transitional state before it is stuck (from CLUSTER_TASK_TIME_LIMIT, "
        "CLUSTER_QUEUE_WAIT, RECONCILE_GRACE and the retries).",
        ["state"],
    )
    budgets = state_budgets()
    for state in TRANSITIONAL:
        since = oldest.get(state)
        age.add_metric([state], max((now - since).total_seconds(), 0.0) if since else 0.0)
        budget.add_metric([state], budgets[state])
    yield from (age, budget)

    leases = _gauge("portal_cluster_leases_held", "Clusters a provisioning attempt holds a live lease on right now.")
    leases.add_metric([], Cluster.objects.filter(live_claim(now)).count())
    late = _gauge(
        "portal_clusters_late",
        "Clusters whose provisioning no worker is known to be doing: the reconciler sends them again.",
    )
    late.add_metric([], late_clusters(now).count())
    yield from (leases, late)


def reporters() -> Iterator[GaugeMetricFamily]:
    """Clusters with nodes whose head-node reporter has posted: still reporting, or silent for three intervals."""
    counts = Cluster.objects.filter(status__in=TAKES_REPORTS, last_report_at__isnull=False).aggregate(
        reported=Count("pk"), silent=Count("pk", filter=Q(reporter_silent_since__isnull=False))
    )
    family = _gauge(
        "portal_reporters",
        "Reporters of clusters with nodes, by state: reporting, or silent (nothing for three report intervals).",
        ["state"],
    )
    family.add_metric(["reporting"], counts["reported"] - counts["silent"])
    family.add_metric(["silent"], counts["silent"])
    yield family


def rollups(now: datetime) -> Iterator[GaugeMetricFamily]:
    """The usage rollups' backlog: organization-days whose figures moved and are not recomputed yet."""
    waiting = UsageDirtyDay.objects.aggregate(days=Count("pk"), oldest=Min("marked_at"))
    days = _gauge("portal_rollup_pending_days", "Organization-days marked for the usage rollup, not recomputed yet.")
    days.add_metric([], waiting["days"])
    lag = _gauge(
        "portal_rollup_lag_seconds",
        "Seconds the oldest change waiting for the usage rollup has waited; 0 when the rollups are up to date.",
    )
    lag.add_metric([], max((now - waiting["oldest"]).total_seconds(), 0.0) if waiting["oldest"] else 0.0)
    yield from (days, lag)


class PortalCollector:
    """prometheus_client's custom collector: its `collect()` runs at each scrape."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        families = list(connectivity())
        database_up = families[0].samples[0].value == 1
        if database_up:
            now = timezone.now()
            groups: list[Callable[[], Iterator[GaugeMetricFamily]]] = [
                lambda: workers(now),
                lambda: clusters(now),
                reporters,
                lambda: rollups(now),
            ]
            for group in groups:
                try:
                    with transaction.atomic():  # a failed query rolls back to here, and the next group goes on
                        families += list(group())
                except DatabaseError:
                    log.warning("metrics: a group of figures could not be read", exc_info=True)
        yield from families
