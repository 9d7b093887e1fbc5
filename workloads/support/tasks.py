"""Celery tasks of support cases: thin wrappers that pass ids to workloads.support."""

import smtplib

from celery import shared_task

from portal import queue
from workloads.support.notifications import send_case_event_email, unnotified_event_ids

# Mail servers fail transiently (connection refused, timeouts, 4xx answers): those are retried with backoff.
TRANSIENT_MAIL_ERRORS = (smtplib.SMTPException, ConnectionError, TimeoutError)


@shared_task(
    name="workloads.tasks.notify_case_event",  # its name before support/ existed: queued messages still resolve
    acks_late=True,  # safe: the compare-and-set claim on the event makes a second run send nothing
    autoretry_for=TRANSIENT_MAIL_ERRORS,
    retry_backoff=True,
    retry_jitter=True,
    max_retries=6,
)
def notify_case_event(event_id: int) -> int:
    """Email one support-case event to the case's participants (internal entries to program staff only)."""
    return send_case_event_email(event_id=event_id)


@shared_task(name="workloads.support.resend_notifications")
def resend_notifications() -> int:
    """Beat, every minute: send again the case emails whose message was lost (a broker down when the event was
    saved, a worker killed). The claim on the event makes a copy that arrives late send nothing."""
    event_ids = unnotified_event_ids()
    for event_id in event_ids:
        queue.send(notify_case_event, event_id, expires=600)
    return len(event_ids)
