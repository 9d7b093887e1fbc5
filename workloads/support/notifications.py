"""Support-case email: who hears about a case, and sending one event to them exactly once."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import EmailMessage, get_connection
from django.db.models import Q
from django.template.loader import render_to_string
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from portal.links import portal_url
from tenants.access import is_program_staff
from tenants.models import StaffRole
from workloads.support.models import CaseEvent, SupportCase

User = get_user_model()

NOTIFIED_KINDS = (
    CaseEvent.Kind.OPENED,
    CaseEvent.Kind.COMMENT,
    CaseEvent.Kind.STATUS_CHANGED,
    CaseEvent.Kind.ASSIGNEE_CHANGED,
)


def case_participants(case: SupportCase, *, internal: bool) -> list:
    """Who hears about a case: its opener, assignee, the org's lead engineer and everyone who wrote on it —
    tenants only while they are still members of the org, and never for an internal entry. A case the portal
    opened itself (a health incident) has no tenant opener: the org's members hear about it instead. With nobody
    from the program team on the case, the program managers hear about it so it is not lost."""
    ids = set(case.events.exclude(actor=None).values_list("actor_id", flat=True))
    ids |= {i for i in (case.opened_by_id, case.assignee_id, case.organization.lead_engineer_id) if i}
    staff = Q(staff_role__isnull=False)
    member = Q(memberships__organization=case.organization)
    chosen = Q(pk__in=ids) | member if case.opened_by_id is None else Q(pk__in=ids)
    people = User.objects.filter(chosen, is_active=True).exclude(email="").select_related("staff_role")
    people = people.filter(staff) if internal else people.filter(staff | member)
    people = list(people.distinct().order_by("pk"))
    if not any(is_program_staff(p) for p in people):
        managers = User.objects.filter(is_active=True, staff_role__role=StaffRole.Role.PROGRAM_MANAGER).select_related(
            "staff_role"
        )
        people += list(managers.exclude(email="").exclude(pk__in=[p.pk for p in people]).order_by("pk"))
    return people


def unnotified_events(now=None):
    """Events that should have been mailed by `now` and were not: older than the time queued work may wait (plus
    a grace), younger than a day (older news is no longer worth an email), never claimed by a send."""
    now = now or timezone.now()
    late = now - timedelta(seconds=settings.CLUSTER_QUEUE_WAIT + settings.RECONCILE_GRACE)
    return CaseEvent.objects.filter(
        kind__in=NOTIFIED_KINDS, notified_at__isnull=True, created_at__lt=late, created_at__gte=now - timedelta(days=1)
    )


def resend_every() -> float:
    """Seconds between the email reconciler's runs (beat's schedule)."""
    return float(settings.CELERY_BEAT_SCHEDULE["resend-case-notifications"]["schedule"])


def unnotified_event_ids(*, limit: int = 500) -> list[int]:
    return list(unnotified_events().order_by("created_at", "pk").values_list("pk", flat=True)[:limit])


def send_case_event_email(*, event_id: int) -> int:
    """Mail one case event to its participants, once: the claim on `notified_at` is a compare-and-set, so a
    rerun or a second worker sends nothing. Returns how many messages went out."""
    claimed = CaseEvent.objects.filter(pk=event_id, notified_at__isnull=True).update(notified_at=timezone.now())
    if not claimed:
        return 0
    event = CaseEvent.objects.select_related("case__organization__lead_engineer", "case__assignee", "actor").get(
        pk=event_id
    )
    case = event.case
    recipients = [p for p in case_participants(case, internal=event.internal) if p.pk != event.actor_id]
    if event.internal:
        # Belt and braces: an internal entry only ever goes to program staff.
        recipients = [p for p in recipients if is_program_staff(p)]
    # One message per person: nobody learns the other participants' addresses. Tenants read it in their
    # organization's email language, the program team in the portal's.
    messages, written = [], {}
    for person in recipients:
        language = settings.LANGUAGE_CODE if is_program_staff(person) else case.organization.language
        if language not in written:
            written[language] = _case_email(event, language)
        subject, body = written[language]
        messages.append(EmailMessage(subject, body, settings.DEFAULT_FROM_EMAIL, [person.email]))
    try:
        sent = get_connection().send_messages(messages) if messages else 0
    except Exception:
        # Give the claim back so the task's retry can send it.
        CaseEvent.objects.filter(pk=event_id).update(notified_at=None)
        raise
    return sent or 0


def _case_email(event: CaseEvent, language: str) -> tuple[str, str]:
    """The subject and text of the email about `event`, in `language`."""
    case = event.case
    with translation.override(language):
        subject = _("[FM Program] Case #%(id)s: %(title)s") % {"id": case.pk, "title": case.shown_title}
        body = render_to_string(
            "workloads/support/email/case_event.txt",
            {"event": event, "case": case, "url": portal_url("support:detail", case.pk)},
        )
    return subject, body
