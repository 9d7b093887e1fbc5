"""Celery tasks of usage accounting: thin wrappers around rollups, the digest and Cost Explorer."""

from celery import shared_task

from portal.cloud import TransientCloudError
from workloads.usage import billing, digest, rollups


@shared_task(name="workloads.usage.roll_up", acks_late=True)  # safe to rerun: marks are claimed, rows rebuilt
def roll_up() -> int:
    """Recompute the organization-days marked since the last run (after a poll cycle, and on beat)."""
    return rollups.roll_up()


@shared_task(name="workloads.usage.refresh_current_days", acks_late=True)
def refresh_current_days() -> int:
    """Beat: today's allocated time grows by the hour and yesterday closes at midnight; recompute both."""
    rollups.mark_current_days()
    return rollups.roll_up()


@shared_task(
    name="workloads.usage.send_weekly_digest",
    acks_late=True,  # safe: the week's claim row makes a second run send nothing
    autoretry_for=(OSError,),
    retry_backoff=True,
    retry_jitter=True,
    max_retries=6,
)
def send_weekly_digest() -> int:
    """Beat, hourly: sends last week's digest once, from Monday 09:00 program time."""
    return digest.send_weekly_digest()


@shared_task(
    name="workloads.usage.fetch_billed_costs",
    acks_late=True,
    # One Cost Explorer call per organization: each ends inside the soft limit, and none starts past it
    # (portal.cloud.calls), so a hanging endpoint costs one bounded run and a retry, never the hard limit.
    soft_time_limit=600,
    time_limit=660,
    cloud_calls=("task",),
    autoretry_for=(TransientCloudError,),
    retry_backoff=30,
    retry_jitter=True,
    max_retries=5,
)
def fetch_billed_costs() -> dict:
    """Beat, every few hours: re-read the last two weeks from Cost Explorer."""
    return billing.fetch_billed_costs()
