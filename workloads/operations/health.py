"""What /healthz and `manage.py workerhealth` report about the workers and the work waiting for them."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Count, Min
from django.utils import timezone

from workloads.operations.models import WorkerHeartbeat

# Beat sends a heartbeat every 30 s: one not run for this long means no worker is taking that queue's work.
STALE_AFTER_SECONDS = 120


def queue_states(now=None) -> dict[str, dict]:
    """Per queue: "ok", "stale" or "unknown" (never seen), with the last heartbeat's age and its wait. No host
    names: /healthz answers anyone (the worker's name stays in the admin, on the heartbeat row)."""
    now = now or timezone.now()
    rows = {row.queue: row for row in WorkerHeartbeat.objects.filter(queue__in=settings.WORKER_QUEUES)}
    states = {}
    for queue in settings.WORKER_QUEUES:
        row = rows.get(queue)
        if row is None:
            states[queue] = {"state": "unknown"}
            continue
        age = max((now - row.ran_at).total_seconds(), 0.0)
        states[queue] = {
            "state": "ok" if age <= STALE_AFTER_SECONDS else "stale",
            "last_heartbeat_seconds_ago": round(age, 1),
            "heartbeat_waited_seconds": round(row.waited_seconds, 1),
        }
    return states


def worker_state(states: dict[str, dict]) -> str:
    """One word for the load balancer's page: "ok" when every queue has a worker taking its work."""
    words = {state["state"] for state in states.values()}
    if words == {"ok"}:
        return "ok"
    if "stale" in words:
        stale = sorted(queue for queue, state in states.items() if state["state"] == "stale")
        return "stale: no heartbeat on " + ", ".join(stale)
    return "unknown: no heartbeat yet"


BEAT_STALE_AFTER_SECONDS = 300  # django_celery_beat writes its last send time every few minutes, not each tick


def beat_state(now=None) -> str:
    """Whether beat is sending: when it last sent a heartbeat — as a worker received it, or when workers are quiet
    too, as beat's scheduler recorded it (django_celery_beat writes that every few minutes). A queue gone quiet
    with beat quiet too is beat's fault, not the workers'."""
    from django_celery_beat.models import PeriodicTask

    now = now or timezone.now()
    received = WorkerHeartbeat.objects.order_by("-sent_at").values_list("sent_at", flat=True).first()
    recorded = (
        PeriodicTask.objects.filter(name__startswith="heartbeat-")
        .exclude(last_run_at=None)
        .order_by("-last_run_at")
        .values_list("last_run_at", flat=True)
        .first()
    )
    sent = [moment for moment in (received, recorded) if moment is not None]
    if not sent:
        return "unknown: no heartbeat sent yet"
    age = (now - max(sent)).total_seconds()
    return "ok" if age <= BEAT_STALE_AFTER_SECONDS else f"stale: last heartbeat sent {round(age)} s ago"


def backlog(now=None) -> dict[str, dict]:
    """Work the portal is waiting on, oldest first: clusters no worker is known to be provisioning and case
    emails not sent (both are sent again by the reconcilers), and queued messages in the broker."""
    from workloads.clusters.reconcile import late_clusters
    from workloads.support.notifications import unnotified_events

    now = now or timezone.now()
    late = late_clusters(now).aggregate(count=Count("pk"), oldest=Min("status_changed_at"))
    return {
        "late_clusters": {
            "count": late["count"],
            "oldest_seconds": round((now - late["oldest"]).total_seconds(), 1) if late["oldest"] else 0,
        },
        "unsent_case_emails": {"count": unnotified_events().count()},
    }
