"""What /healthz and `manage.py workerhealth` report about the workers and the work waiting for them."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Count, Min
from django.utils import timezone

from workloads.operations.models import WorkerHeartbeat

# Beat sends a heartbeat every 30 s: one more than 60 s late means no worker is taking that queue's work.
HEARTBEAT_SECONDS = 30
STALE_AFTER_SECONDS = HEARTBEAT_SECONDS + 60
# How long deep health waits for workers to say which queues they consume (a live worker answers in milliseconds;
# a killed one, or one whose broker connection is gone, never does).
CONSUMER_REPLY_SECONDS = 1.0


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


def queue_consumers(app, *, timeout: float = CONSUMER_REPLY_SECONDS) -> dict[str, int] | str:
    """Per queue, how many live workers consume it: those that answer a broadcast (Celery's `inspect
    active_queues`) within `timeout`. Unlike a heartbeat, it sees a worker killed a second ago."""
    try:
        replies = app.control.inspect(timeout=timeout).active_queues() or {}
    except Exception as exc:  # kombu raises transport-specific errors
        return f"unknown: {exc.__class__.__name__}: {exc}".strip()
    counts = dict.fromkeys(settings.WORKER_QUEUES, 0)
    for queues in replies.values():
        for queue in queues or []:
            if queue.get("name") in counts:
                counts[queue["name"]] += 1
    return counts


def consumer_state(consumers: dict[str, int] | str) -> str:
    if isinstance(consumers, str):
        return consumers
    missing = sorted(queue for queue, count in consumers.items() if not count)
    if missing:
        return (
            f"missing: no live worker consumes {', '.join(missing)} (none answered within {CONSUMER_REPLY_SECONDS:g} s)"
        )
    return "ok"


def aws_state(now=None) -> dict:
    """AWS endpoints (account × region × service) whose latest call in the last minutes failed or timed out."""
    from workloads.operations.cloud_calls import failing_endpoints

    failing = failing_endpoints(now)
    return {"state": "failing" if failing else "ok", "failing": failing}


def problems(*, broker: str, worker: str, consumers: str, beat: str, backlog: dict, aws: dict) -> list[str]:
    """Each failing check of the deep health answer, named in a line an operator can act on."""
    found = [f"{name}: {state}" for name, state in (("broker", broker), ("worker", worker)) if state != "ok"]
    if consumers != "ok":
        found.append(f"consumers: {consumers}")
    if beat != "ok":
        found.append(f"beat: {beat}")
    if late := backlog["late_clusters"]["count"]:
        found.append(f"backlog: {late} late clusters, oldest {backlog['late_clusters']['oldest_seconds']:g} s")
    if unsent := backlog["unsent_case_emails"]["count"]:
        found.append(f"backlog: {unsent} case emails not sent")
    found += [f"aws: {endpoint['summary']}" for endpoint in aws["failing"]]
    return found
