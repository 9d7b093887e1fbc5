"""What /healthz and `manage.py workerhealth` report about the workers and the work waiting for them."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import timedelta

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
    rows = {row.queue: row for row in WorkerHeartbeat.objects.filter(queue__in=settings.WORKER_QUEUES)}  # not beat's
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


# Beat notes every 2 s that it is alive (workloads.operations.beat): three missed notes and a margin.
BEAT_STALE_AFTER_SECONDS = 8


def beat_state(now=None) -> str:
    """Whether beat is running: when it last noted so itself (its row among the heartbeats, every 2 s), or last
    sent a heartbeat a worker received, whichever is later."""
    now = now or timezone.now()
    noted = WorkerHeartbeat.objects.order_by("-sent_at").values_list("sent_at", flat=True).first()
    if noted is None:
        return "unknown: beat has not started yet"
    age = (now - noted).total_seconds()
    return "ok" if age <= BEAT_STALE_AFTER_SECONDS else f"stopped: not running for {round(age)} s"


# How long past its reconciler's next run work may wait before deep health names it: a reconciler's run and its send.
BACKLOG_MARGIN_SECONDS = 10


def backlog(now=None) -> dict[str, dict]:
    """Work the reconcilers have not caught up with, oldest first: clusters no worker is known to be provisioning and
    case emails not sent. Late by one reconciler's period (and a margin) more than the reconcilers' own rule, so
    deep health names work a reconciler missed, not work it is about to send: seen in `make chaos`, the emails of
    comments made while Redis was down were named for up to a minute after it came back, each the moment the
    reconciler was due to send it."""
    from workloads.clusters.reconcile import late_clusters, reconcile_every
    from workloads.support.notifications import resend_every, unnotified_events

    now = now or timezone.now()
    clusters_missed = now - timedelta(seconds=reconcile_every() + BACKLOG_MARGIN_SECONDS)
    late = late_clusters(clusters_missed).aggregate(count=Count("pk"), oldest=Min("status_changed_at"))
    emails_missed = now - timedelta(seconds=resend_every() + BACKLOG_MARGIN_SECONDS)
    return {
        "late_clusters": {
            "count": late["count"],
            "oldest_seconds": round((now - late["oldest"]).total_seconds(), 1) if late["oldest"] else 0,
        },
        "unsent_case_emails": {"count": unnotified_events(emails_missed).count()},
    }


def queue_consumers(app, *, timeout: float = CONSUMER_REPLY_SECONDS) -> dict[str, int] | str:
    """Per queue, how many live workers consume it: those that answer a broadcast (Celery's `inspect
    active_queues`) within `timeout`. Unlike a heartbeat, it sees a worker killed a second ago. A queue no worker
    answered for, or a broadcast that failed, is asked about once more, twice as patiently: a worker busy on a loaded
    machine may answer late, and a false alarm costs an operator more than a second."""
    counts = _consumers(app, timeout)
    if isinstance(counts, str) or not all(counts.values()):
        # Asked again too when the broadcast failed: the first use of a connection Redis closed when it restarted
        # fails ("Connection closed by server"), and the next one reconnects.
        again = _consumers(app, 2 * timeout)
        if isinstance(counts, str) or isinstance(again, str):
            return again
        counts = {queue: max(count, again[queue]) for queue, count in counts.items()}
    return counts


def _consumers(app, timeout: float) -> dict[str, int] | str:
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
            f"missing: no live worker consumes {', '.join(missing)} "
            f"(none answered within {CONSUMER_REPLY_SECONDS:g} s, nor when asked again)"
        )
    return "ok"


@contextmanager
def probing_aws(now=None):
    """Probes the AWS endpoints called lately (portal.cloud.reachability) in a thread while the caller does other
    slow checks; the future's result is what `aws_state(probes=…)` takes. The endpoints are read here, in the
    caller's thread (the probe itself needs no database)."""
    from portal.cloud import reachability
    from workloads.operations.cloud_calls import recent_endpoints

    endpoints = recent_endpoints(now)
    with ThreadPoolExecutor(max_workers=1) as pool:
        yield pool.submit(reachability.probe, endpoints)


def aws_state(now=None, *, probes: dict | None = None) -> dict:
    """AWS endpoints (account × region × service) that do not answer now, or whose latest call in the last minutes
    failed. The calls' outcomes are checked against a probe of each endpoint called lately (portal.cloud.reachability):
    an endpoint that stopped answering is named within seconds, not when a call times out, and one that failed by
    not answering is cleared as soon as it answers the probe again (an error it answered with stays until a call
    succeeds)."""
    from portal.cloud.calls import NO_ANSWER
    from workloads.operations.cloud_calls import failing_endpoints

    now = now or timezone.now()
    if probes is None:
        with probing_aws(now) as future:
            probes = future.result()
    failing = []
    for endpoint in failing_endpoints(now):
        answered = probes.get((endpoint["service"], endpoint["region"]))
        if answered is not None and not answered.problem and endpoint["last_failure"] in NO_ANSWER:
            continue  # it failed by not answering, and answers now
        failing.append(endpoint)
    named = {(endpoint["service"], endpoint["region"]) for endpoint in failing}
    for (service, region), answered in sorted(probes.items()):
        if answered.problem and (service, region) not in named:
            summary = f"{service} {region}: not answering ({answered.problem}, {answered.url})"
            failing.append({"service": service, "region": region, "last_failure": answered.problem, "summary": summary})
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
