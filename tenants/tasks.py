from celery import shared_task

from tenants import services


@shared_task(acks_late=True)  # safe to rerun: compare-and-set transitions, idempotent
def refresh_allocation_statuses() -> int:
    """Scheduled → active → expired as program days pass (beat runs it hourly)."""
    return services.refresh_allocation_statuses()
