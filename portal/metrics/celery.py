"""Celery tasks counted by outcome and timed, by task and queue (connected by portal.celery, so in every worker).

The pool process that ran a task counts it as it ends (`task_postrun`: success, failure, retry, ignored…). A task
that never got there is counted by the worker's main process: killed at its hard time limit (`time_limit`), its pool
process lost (`worker_lost`), revoked or expired before it ran. A worker's container starting (`worker_init`,
`beat_init`) clears the files its earlier run left (portal.metrics.registry).
"""

from __future__ import annotations

import time

from billiard.exceptions import WorkerLostError
from celery.exceptions import TimeLimitExceeded
from celery.signals import beat_init, task_failure, task_postrun, task_prerun, task_revoked, worker_init

from portal.metrics import registry

_started: dict[str, float] = {}


def queue_of(task, delivery_info: dict | None = None) -> str:
    """The queue the message came from (its routing key, with Celery's default exchange); `eager` for a task run in
    the calling process (tests, CELERY_TASK_ALWAYS_EAGER). The worker's main process, reporting a task its pool
    process never finished, has no message at hand: the queue the task is routed to (CELERY_TASK_ROUTES)."""
    request = getattr(task, "request", None)
    if delivery_info is None:
        if getattr(request, "is_eager", False):
            return "eager"
        delivery_info = getattr(request, "delivery_info", None) or {}
    if queue := delivery_info.get("routing_key"):
        return str(queue)
    app = getattr(task, "app", None)
    if app is None:
        return "unknown"
    routes = app.conf.task_routes if isinstance(app.conf.task_routes, dict) else {}
    return (routes.get(_name(task)) or {}).get("queue") or app.conf.task_default_queue


def _name(task) -> str:
    return getattr(task, "name", None) or "unknown"


@task_prerun.connect(dispatch_uid="metrics-task-start")
def _task_started(task_id=None, **kwargs) -> None:
    if task_id:
        _started[task_id] = time.perf_counter()


@task_postrun.connect(dispatch_uid="metrics-task-end")
def _task_ended(task_id=None, task=None, state=None, **kwargs) -> None:
    started = _started.pop(task_id, None)
    seconds = time.perf_counter() - started if started is not None else None
    registry.count_task(task=_name(task), queue=queue_of(task), outcome=(state or "unknown").lower(), seconds=seconds)


@task_failure.connect(dispatch_uid="metrics-task-killed")
def _task_killed(sender=None, exception=None, **kwargs) -> None:
    # Only what the main process reports: a failure inside the task is counted at its postrun already.
    if isinstance(exception, TimeLimitExceeded):
        outcome = "time_limit"
    elif isinstance(exception, WorkerLostError):
        outcome = "worker_lost"
    else:
        return
    registry.count_task(task=_name(sender), queue=queue_of(sender, {}), outcome=outcome)


@task_revoked.connect(dispatch_uid="metrics-task-revoked")
def _task_revoked(sender=None, request=None, expired=False, **kwargs) -> None:
    queue = queue_of(sender, getattr(request, "delivery_info", None) or {})
    registry.count_task(task=_name(sender), queue=queue, outcome="expired" if expired else "revoked")


@worker_init.connect(dispatch_uid="metrics-clear-worker")
@beat_init.connect(dispatch_uid="metrics-clear-beat")
def _container_started(**kwargs) -> None:
    registry.clear_own_files()
