"""What /healthz and /metrics both ask of the database and the broker (portal.views, portal.metrics)."""

from django.conf import settings
from django.db import DatabaseError, connection

from portal.celery import app as celery_app


def database_state() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as exc:
        return f"down: {exc}".strip()
    return "ok"


def broker_state() -> str:
    try:
        with celery_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
    except Exception as exc:  # kombu raises transport-specific errors; all of them mean "down"
        return f"down: {exc.__class__.__name__}: {exc}".strip()
    return "ok"


def queue_depths() -> dict[str, int | str]:
    """Messages waiting in each queue, as the broker counts them."""
    depths: dict[str, int | str] = {}
    try:
        with celery_app.connection_for_read() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
            channel = conn.default_channel
            for queue in settings.WORKER_QUEUES:
                try:
                    depths[queue] = channel.queue_declare(queue=queue, passive=True).message_count
                except Exception:  # a queue nothing was ever sent to does not exist yet: nothing waits in it
                    depths[queue] = 0
    except Exception as exc:
        return {queue: f"unknown: {exc.__class__.__name__}" for queue in settings.WORKER_QUEUES}
    return depths
