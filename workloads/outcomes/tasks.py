"""Celery tasks of outcomes: thin wrappers around workloads.outcomes."""

from celery import shared_task

from workloads.outcomes import alerts, review, services
from workloads.outcomes.reports import services as reports
from workloads.support.tasks import TRANSIENT_MAIL_ERRORS


@shared_task(name="workloads.outcomes.follow_milestones", acks_late=True)  # safe: each is met by a compare-and-set
def follow_milestones() -> int:
    """Beat: mark met the measured milestones whose workload has trained their tokens."""
    return services.follow_measured_milestones()


@shared_task(name="workloads.outcomes.check_budgets", acks_late=True)  # safe: one open alert per threshold
def check_budgets() -> int:
    """Beat: fire and clear budget alerts against spend and forecast; mail the ones fired (each mail its own task, so
    a mail server down retries that mail alone)."""
    fired = alerts.check_budgets()
    for alert_id in fired:
        mail_budget_alert.delay(alert_id)
    return len(fired)


@shared_task(
    name="workloads.outcomes.mail_budget_alert",
    acks_late=True,  # safe: the claim on mailed_at makes a second run send nothing
    autoretry_for=TRANSIENT_MAIL_ERRORS,
    retry_backoff=True,
    retry_jitter=True,
    max_retries=6,
)
def mail_budget_alert(alert_id: int) -> int:
    return alerts.mail_alert(alert_id=alert_id)


@shared_task(name="workloads.outcomes.generate_reports", acks_late=True)  # safe: a report generated is replaced
def generate_reports() -> int:
    """Beat, daily: last month's reports from the 1st, the end-of-cycle ones after the program's last day; each
    mailed on its own."""
    made = reports.generate_due()
    for report_id in sorted(set(made) | set(reports.unmailed())):
        mail_report.delay(report_id)
    return len(made)


@shared_task(
    name="workloads.outcomes.mail_report",
    acks_late=True,  # safe: the claim on mailed_at makes a second run send nothing
    autoretry_for=TRANSIENT_MAIL_ERRORS,
    retry_backoff=True,
    retry_jitter=True,
    max_retries=6,
)
def mail_report(report_id: int) -> int:
    return reports.mail_report(report_id=report_id)


@shared_task(
    name="workloads.outcomes.remind_cycle_reviews",
    acks_late=True,  # safe: each organization's reminder is claimed on reminded_at first
    autoretry_for=TRANSIENT_MAIL_ERRORS,
    retry_backoff=True,
    retry_jitter=True,
    max_retries=6,
)
def remind_cycle_reviews() -> int:
    """Beat, daily: remind the admins of the organizations that have not confirmed their cycle review."""
    return review.remind()
