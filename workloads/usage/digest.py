"""The weekly digest: every Monday from 09:00 program time, last week's usage table, the idle organizations, each
organization's training (MFU, goodput) and the training at risk of missing its plan, and the open S1/S2 cases,
mailed to the program managers — once per week however often the task runs."""

from __future__ import annotations

import logging
from datetime import time, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import EmailMultiAlternatives, get_connection
from django.db import IntegrityError, transaction
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.translation import gettext as _

from portal.links import portal_url
from portal.periods import iso_week, this_week
from tenants.models import Organization, Program, StaffRole
from workloads.support.models import SupportCase
from workloads.training.models import TrainingRun
from workloads.training.program import organizations_week, training_at_risk
from workloads.usage.models import DigestSent
from workloads.usage.periods import Period
from workloads.usage.reports import program_report

log = logging.getLogger(__name__)
SEND_FROM = time(9)  # Monday, program time


def due(now=None) -> bool:
    """From Monday 09:00 program time (and every later moment of the week: a missed Monday still sends)."""
    local = timezone.localtime(now or timezone.now())
    return local.weekday() > 0 or local.time() >= SEND_FROM


def send_weekly_digest(*, now=None) -> int:
    """Send last week's digest if it is due and not sent yet; returns the number of messages sent."""
    if not due(now):
        return 0
    week_start = this_week() - timedelta(days=7)
    try:
        with transaction.atomic():
            claim = DigestSent.objects.create(week_start=week_start)  # the unique week is the claim
    except IntegrityError:
        return 0  # another run has it (sent, or sending now)
    try:
        sent = _send(week_start)
    except Exception:
        claim.delete()  # give the claim back so the task's retry can send it
        raise
    DigestSent.objects.filter(pk=claim.pk).update(sent_at=timezone.now(), recipients=sent)
    return sent


def _send(week_start) -> int:
    period = Period("week", week_start, week_start + timedelta(days=6))
    program = Program.objects.first()
    report = program_report(period=period, organizations=Organization.objects.all(), program=program)
    cases = (
        SupportCase.objects.active()
        .filter(severity__in=[SupportCase.Severity.S1, SupportCase.Severity.S2])
        .select_related("organization", "assignee")
        .order_by("severity", "created_at")
    )
    managers = list(
        get_user_model()
        .objects.filter(is_active=True, staff_role__role=StaffRole.Role.PROGRAM_MANAGER)
        .exclude(email="")
        .order_by("pk")
    )
    if not managers:
        return 0
    at_risk = training_at_risk(TrainingRun.objects.all())
    training = organizations_week([row.organization.pk for row in report.rows], week=week_start)
    context = {
        "report": report,
        "training": [(row.organization, training.get(row.organization.pk)) for row in report.rows],
        "at_risk": at_risk,
        "program": program,
        "week": iso_week(week_start),
        "cases": list(cases),
        "url": portal_url("usage:program") + "?" + period.query_string,
        "case_url": portal_url("support:list"),
    }
    subject = _("[FM Program] Weekly usage %(week)s") % {"week": context["week"]}
    text = render_to_string("workloads/usage/email/digest.txt", context)
    html = render_to_string("workloads/usage/email/digest.html", context)
    messages = []
    for manager in managers:
        message = EmailMultiAlternatives(subject, text, settings.DEFAULT_FROM_EMAIL, [manager.email])
        message.attach_alternative(html, "text/html")
        messages.append(message)
    return get_connection().send_messages(messages) or 0
