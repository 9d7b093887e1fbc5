"""Generating, storing and mailing the funding body's reports.

A monthly report covers a calendar month of the program; beat generates last month's from the 1st (program time),
for the program and each organization, in English and Japanese, and mails each recipient the program set its report
in its language (the XLSX and the PDF attached). The end-of-cycle report covers the whole cycle and is generated the
day after the program's last day. A program manager can generate any of them again from the reports page; the new
one replaces the old. Each step is idempotent: generating replaces, mailing claims `mailed_at` first."""

from __future__ import annotations

import logging
from datetime import date, datetime, timedelta

from django.conf import settings
from django.core.mail import EmailMessage, get_connection
from django.db import transaction
from django.utils import timezone, translation
from django.utils.formats import date_format
from django.utils.translation import gettext as _
from django.utils.translation import pgettext

from portal.links import portal_url
from tenants.audit import record_audit
from tenants.models import Organization, Program
from workloads.outcomes.models import Report, ReportRecipient
from workloads.outcomes.reports import content, pdf, xlsx
from workloads.usage.periods import Period

log = logging.getLogger(__name__)
LANGUAGES = [code for code, _name in settings.LANGUAGES]
XLSX_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def period_of(program: Program, kind: str, first_day: date) -> Period:
    if kind == Report.Kind.CYCLE:
        return Period("range", program.starts_on, program.ends_on)
    return content.month_period(first_day)


def title(program: Program, organization: Organization | None, kind: str, period: Period) -> str:
    whose = organization.name if organization else program.name
    if kind == Report.Kind.CYCLE:
        return pgettext("report title", "%(whose)s: end-of-cycle report") % {"whose": whose}
    return pgettext("report title", "%(whose)s: monthly report, %(month)s") % {
        "whose": whose,
        "month": date_format(period.first, "YEAR_MONTH_FORMAT"),
    }


def generate(
    *,
    program: Program,
    organization: Organization | None,
    kind: str,
    first_day: date,
    language: str,
    now=None,
    user=None,
) -> Report:
    """Build the report's content, write its XLSX and PDF, and store it (replacing an earlier one)."""
    now = now or timezone.now()
    period = period_of(program, kind, first_day)
    as_of = min(now, timezone.make_aware(datetime.combine(period.last + timedelta(days=1), datetime.min.time())))
    with translation.override(language):
        built = content.build(
            program=program,
            organization=organization,
            period=period,
            as_of=as_of,
            title=title(program, organization, kind, period),
        )
        workbook = xlsx.workbook(built)
        try:
            document, error = pdf.document(built, language), ""
        except pdf.PdfUnavailable as unavailable:
            log.warning("reports: no PDF: %s", unavailable)
            document, error = None, _("The PDF needs Pango on the worker (Debian: libpango-1.0-0, libpangoft2-1.0-0).")
    with transaction.atomic():
        report, created = Report.objects.update_or_create(
            program=program,
            organization=organization,
            kind=kind,
            first_day=period.first,
            language=language,
            defaults={
                "last_day": period.last,
                "generated_at": now,
                "xlsx": workbook,
                "pdf": document,
                "pdf_error": error,
                "mailed_at": None,
            },
        )
        if user is not None:
            record_audit(
                actor=user,
                organization=organization,
                action="report.generated",
                target=report,
                comment=f"{report.file_stem}",
            )
    return report


def last_month(today: date) -> date:
    return (today.replace(day=1) - timedelta(days=1)).replace(day=1)


def generate_due(*, now=None) -> list[int]:
    """Beat: last month's monthly reports (once), and the end-of-cycle ones after the program's last day. Returns
    the ids of the reports generated."""
    now = now or timezone.now()
    today = timezone.localdate(now)
    program = Program.objects.first()
    if program is None:
        return []
    due = []
    month = last_month(today)
    if program.starts_on <= content.month_period(month).last and month <= program.ends_on:
        due.append((Report.Kind.MONTHLY, month))
    if today > program.ends_on:
        due.append((Report.Kind.CYCLE, program.starts_on))
    made = []
    for kind, first in due:
        first_day = period_of(program, kind, first).first
        done = set(
            Report.objects.filter(program=program, kind=kind, first_day=first_day).values_list(
                "organization_id", "language"
            )
        )
        for organization in [None, *Organization.objects.order_by("name")]:
            for language in LANGUAGES:
                if (organization.pk if organization else None, language) in done:
                    continue
                try:
                    report = generate(
                        program=program, organization=organization, kind=kind, first_day=first, language=language,
                        now=now,
                    )  # fmt: skip
                except Exception:
                    # One report that fails (a layout error, memory) never keeps the others from being made; the
                    # next run tries it again.
                    log.exception("reports: %s %s %s %s failed", kind, first, organization, language)
                    continue
                made.append(report.pk)
    return made


def unmailed(*, now=None) -> list[int]:
    """Reports of the last 40 days not mailed yet (a mail that failed for good, a worker killed before sending):
    beat sends them again; the claim on `mailed_at` keeps a copy from being sent twice."""
    now = now or timezone.now()
    recent = Report.objects.filter(mailed_at__isnull=True, generated_at__gte=now - timedelta(days=40))
    return list(recent.values_list("pk", flat=True))


def mail_report(*, report_id: int) -> int:
    """Mail one report to the recipients of its program (or organization) who read its language, once."""
    if not Report.objects.filter(pk=report_id, mailed_at__isnull=True).update(mailed_at=timezone.now()):
        return 0
    report = Report.objects.select_related("program", "organization").get(pk=report_id)
    recipients = ReportRecipient.objects.filter(
        program=report.program, organization=report.organization, language=report.language
    )
    addresses = sorted(recipients.values_list("email", flat=True))
    if not addresses:
        return 0
    with translation.override(report.language):
        period = period_of(report.program, report.kind, report.first_day)
        subject = "[FM Program] " + title(report.program, report.organization, report.kind, period)
        url = portal_url("outcomes:reports")
        body = _("The report is attached as a workbook (XLSX) and a PDF. All reports: %(url)s") % {"url": url}
        if report.pdf is None:
            body += "\n\n" + report.pdf_error
    messages = []
    for address in addresses:
        message = EmailMessage(subject, body, settings.DEFAULT_FROM_EMAIL, [address])
        message.attach(f"{report.file_stem}.xlsx", bytes(report.xlsx), XLSX_TYPE)
        if report.pdf is not None:
            message.attach(f"{report.file_stem}.pdf", bytes(report.pdf), "application/pdf")
        messages.append(message)
    try:
        return get_connection().send_messages(messages) or 0
    except Exception:
        Report.objects.filter(pk=report_id).update(mailed_at=None)
        raise
