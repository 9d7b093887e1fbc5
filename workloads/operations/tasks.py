"""The heartbeat task: beat sends it to each queue; whichever worker takes it writes the queue's row."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from celery import shared_task
from celery.signals import before_task_publish, worker_ready
from django.db import DatabaseError
from django.utils import timezone

from workloads.operations.models import WorkerHeartbeat

log = logging.getLogger(__name__)
HEARTBEAT = "workloads.operations.heartbeat"
SENT_AT = "portal_sent_at"  # a message header: Celery hands custom headers to the task as request attributes


@before_task_publish.connect(dispatch_uid="heartbeat-sent-at")
def stamp_heartbeat(sender=None, headers=None, **kwargs) -> None:
    """Beat publishes the same heartbeat every time; the header carries when this one was sent."""
    if sender == HEARTBEAT and headers is not None:
        headers[SENT_AT] = timezone.now().timestamp()


@shared_task(name=HEARTBEAT, bind=True, ignore_result=True)
def heartbeat(self, queue: str) -> float:
    """Returns how many seconds the heartbeat waited in its queue."""
    now = timezone.now()
    stamp = getattr(self.request, SENT_AT, None)
    sent_at = datetime.fromtimestamp(float(stamp), tz=UTC) if stamp else now
    row, _ = WorkerHeartbeat.objects.update_or_create(
        queue=queue, defaults={"sent_at": sent_at, "ran_at": now, "worker": self.request.hostname or ""}
    )
    return row.waited_seconds


@worker_ready.connect(dispatch_uid="heartbeat-as-a-worker-starts")
def heartbeat_as_a_worker_starts(sender=None, **kwargs) -> None:
    """A worker that starts consuming its queues is taking their work: their rows say so now, not at beat's next
    heartbeat up to 30 s later (deep health said "worker: unknown" meanwhile, at every start of the portal)."""
    queues = sorted(getattr(sender.app.amqp.queues, "consume_from", None) or {})
    now = timezone.now()
    try:
        for queue in queues:
            WorkerHeartbeat.objects.update_or_create(
                queue=queue, defaults={"sent_at": now, "ran_at": now, "worker": sender.hostname or ""}
            )
    except DatabaseError as error:  # the database is down: beat's next heartbeat writes the rows
        log.warning("worker ready: could not write the heartbeats of %s: %s", ", ".join(queues), error)
