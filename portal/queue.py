"""Sending Celery tasks after a transaction commits, without ever failing the request that caused them.

The committed row is the record of the work (a cluster in `requested`, a case event not yet notified); the
message is only a nudge. When the broker cannot take it, the request still succeeds and a reconciler on beat
sends the task again (workloads.clusters.reconcile, workloads.support.tasks.resend_notifications).
"""

from __future__ import annotations

import logging

from django.db import transaction
from kombu.exceptions import OperationalError

log = logging.getLogger(__name__)

# What publishing raises when the broker is down or unreachable (kombu wraps most of them in OperationalError).
BROKER_ERRORS = (OperationalError, ConnectionError, TimeoutError, OSError)


def send(task, *args, expires: float | None = None) -> bool:
    """Publish `task(*args)` now; False (logged) if the broker could not take it. A reconciler sends with
    `expires`, so the copies it sends every minute while no worker runs do not pile up in the queue."""
    if task.app.conf.task_always_eager:
        task.apply_async(args)  # tests: the task runs here, and its own errors must surface
        return True
    try:
        task.apply_async(args, expires=expires)
    except BROKER_ERRORS as error:
        log.warning("could not send %s%r (%s); the reconciler will send it again", task.name, args, error)
        return False
    except Exception:  # a broker that answers with an error (out of memory, read-only): the same, but unexpected
        log.exception("could not send %s%r; the reconciler will send it again", task.name, args)
        return False
    return True


def send_on_commit(task, *args, on_refused=None) -> None:
    """`task.delay_on_commit(*args)` that cannot fail the request: a rolled-back transaction sends nothing,
    a committed one sends once, and a broker that is down is logged for the reconciler — and `on_refused()`
    called, so the row can say its message was never sent (it is then due at the reconciler's next run)."""

    def publish() -> None:
        if not send(task, *args) and on_refused is not None:
            on_refused()

    transaction.on_commit(publish)
