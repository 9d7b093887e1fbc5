"""Celery task of the cluster reporters: beat marks the silent ones (workloads.reporting.services)."""

from celery import shared_task

from workloads.reporting import services


@shared_task(name="workloads.reporting.check_reporters", acks_late=True, expires=120)
def check_reporters() -> dict[str, int]:
    """Safe to run twice: a silent cluster is marked once, a job flagged once (compare-and-set)."""
    return services.check_reporters()
