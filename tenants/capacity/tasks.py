"""Celery tasks of capacity: thin wrappers that pass ids (or nothing) to the services."""

from celery import shared_task

from tenants.capacity.allocations import refresh_allocation_statuses as refresh


# The registered name predates this module: beat rows and queued messages keep resolving.
@shared_task(name="tenants.tasks.refresh_allocation_statuses", acks_late=True)  # safe to rerun: compare-and-set
def refresh_allocation_statuses() -> int:
    """Scheduled → active → expired as program days pass (beat runs it hourly)."""
    return refresh()
