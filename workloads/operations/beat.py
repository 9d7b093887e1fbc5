"""Beat's scheduler: django_celery_beat's, which also writes down every few seconds that beat is alive.

Deep health must name a stopped beat within seconds. What beat sends (the queues' heartbeats, every 30 s) and what
django_celery_beat records (a task's last run, written every few minutes) are too slow for that; so each pass of
the scheduler's loop — at least every TICK_SECONDS — updates beat's row among the heartbeats (`BEAT_ROW`).
"""

from __future__ import annotations

import logging
import socket

from django.db import DatabaseError, close_old_connections
from django.utils import timezone
from django_celery_beat.schedulers import DatabaseScheduler

from workloads.operations.models import BEAT_ROW, WorkerHeartbeat

log = logging.getLogger(__name__)
TICK_SECONDS = 2.0  # the longest beat sleeps between passes: deep health calls it stopped after a few missed ones


def note_alive() -> None:
    now = timezone.now()
    try:
        updated = WorkerHeartbeat.objects.filter(queue=BEAT_ROW).update(sent_at=now, ran_at=now)
        if not updated:
            WorkerHeartbeat.objects.get_or_create(
                queue=BEAT_ROW, defaults={"sent_at": now, "ran_at": now, "worker": f"beat@{socket.gethostname()}"}
            )
    except DatabaseError as error:  # the database is down: deep health says so itself; beat goes on
        log.warning("beat: could not note that it is alive: %s", error)
        close_old_connections()


class Scheduler(DatabaseScheduler):
    def tick(self, *args, **kwargs):
        interval = super().tick(*args, **kwargs)
        note_alive()
        return min(interval, TICK_SECONDS)
