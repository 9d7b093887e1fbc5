"""The heartbeat task: beat sends it to each queue; whichever worker takes it writes the queue's row."""

from __future__ import annotations

from datetime import UTC, datetime

from celery import shared_task
from celery.signals import before_task_publish
from django.utils import timezone

from workloads.operations.models import WorkerHeartbeat

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
