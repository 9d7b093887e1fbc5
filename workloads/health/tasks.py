"""Celery task of GPU telemetry: beat polls every enabled Prometheus source (workloads.health.polling)."""

from celery import shared_task

from workloads.health import polling


@shared_task(name="workloads.health.poll_gpu_telemetry", acks_late=True, expires=240)
def poll_gpu_telemetry() -> dict[str, int]:
    """Safe to run twice: events are keyed per node, GPU and kind, so a repeat read changes nothing. A failing source
    records its error and waits for the next tick (the schedule is the retry)."""
    return polling.poll_all()
