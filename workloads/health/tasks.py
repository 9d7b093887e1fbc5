"""Celery task of GPU telemetry: beat polls every enabled Prometheus source (workloads.health.polling)."""

from celery import shared_task

from workloads.health import polling


# Within beat's interval (GPU_TELEMETRY_SECONDS, 120 s): an STS call and two Prometheus queries per source, each
# ending inside the soft limit; a source not reached in time waits for the next tick.
@shared_task(
    name="workloads.health.poll_gpu_telemetry",
    acks_late=True,
    expires=240,
    soft_time_limit=100,
    time_limit=120,
    cloud_calls=("poll", "prometheus"),
)
def poll_gpu_telemetry() -> dict[str, int]:
    """Safe to run twice: events are keyed per node, GPU and kind, so a repeat read changes nothing. A failing source
    records its error and waits for the next tick (the schedule is the retry)."""
    return polling.poll_all()
