"""Budget alerts, as AWS Budgets has them: when spend reaches a threshold of the budget (80 % and 100 % unless a
program manager sets others), and when the forecast to the end of the cycle passes it. Each fires once — one open
alert per budget, kind and threshold, a unique constraint — is mailed to the program managers and, for an
organization's budget, to its admins, and shows on the landing page. It stands until the budget or its thresholds
change and the figure is then under it: spend and the forecast wobble around a threshold hour by hour, which must
never clear an alert and fire it again."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import EmailMessage, get_connection
from django.db import IntegrityError, transaction
from django.template.loader import render_to_string
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from portal.links import portal_url
from tenants.models import Membership, Organization, Program, StaffRole
from workloads.outcomes.budget import Standing, standings
from workloads.outcomes.models import Budget, BudgetAlert
from workloads.outcomes.texts import alert_text
from workloads.usage.formats import usd_text

User = get_user_model()


def crossed(standing: Standing) -> set[tuple[str, int]]:
    """The (kind, percent) thresholds a budget stands past now."""
    budget, total = standing.budget, standing.budget_micro_usd
    found = {(BudgetAlert.Kind.SPENT, p) for p in budget.alert_percents if standing.spent * 100 >= p * total}
    if budget.alert_on_forecast and standing.forecast_over:
        found.add((BudgetAlert.Kind.FORECAST, 100))
    return found


def configured(budget: Budget) -> set[tuple[str, int]]:
    """The (kind, percent) thresholds the budget sets."""
    found = {(BudgetAlert.Kind.SPENT, p) for p in budget.alert_percents}
    if budget.alert_on_forecast:
        found.add((BudgetAlert.Kind.FORECAST, 100))
    return found


def check_budgets(*, now=None) -> list[int]:
    """Fire the alerts every budget of the current program stands past, clear those it no longer does. Returns the
    ids of the alerts fired, for workloads.outcomes.tasks to mail. Safe to run twice: an open alert never fires
    again."""
    now = now or timezone.now()
    program = Program.objects.first()
    if program is None or not Budget.objects.filter(program=program).exists():
        return []
    organizations = list(Organization.objects.filter(budgets__program=program).order_by("name"))
    rows, whole = standings(program, organizations=organizations, with_program=True, now=now)
    fired = []
    for standing in [*rows, whole]:
        if standing.budget is None:
            continue
        past = crossed(standing)
        open_alerts = {(a.kind, a.percent): a for a in standing.budget.alerts.filter(cleared_at__isnull=True)}
        for key, alert in open_alerts.items():
            # An alert stands until the budget or its thresholds change and the figure is then under it: spend and
            # the forecast wobble hourly around a threshold (rollups, billing, the rate at midnight), which must
            # never clear and fire it again, mailing everyone each time.
            changed = alert.budget_micro_usd != standing.budget_micro_usd or key not in configured(standing.budget)
            if key not in past and changed:
                BudgetAlert.objects.filter(pk=alert.pk, cleared_at__isnull=True).update(cleared_at=now)
        for kind, percent in sorted(past - set(open_alerts)):
            try:
                with transaction.atomic():
                    alert = BudgetAlert.objects.create(
                        budget=standing.budget,
                        organization=standing.organization,
                        kind=kind,
                        percent=percent,
                        spent_micro_usd=standing.spent,
                        forecast_micro_usd=standing.forecast.at_end if standing.forecast else None,
                        budget_micro_usd=standing.budget_micro_usd,
                    )
            except IntegrityError:
                continue  # a concurrent run fired it
            fired.append(alert.pk)
    return fired


def recipients(alert: BudgetAlert) -> list:
    managers = User.objects.filter(is_active=True, staff_role__role=StaffRole.Role.PROGRAM_MANAGER)
    people = list(managers.exclude(email="").order_by("pk"))
    if alert.organization_id:
        admins = User.objects.filter(
            is_active=True,
            memberships__organization_id=alert.organization_id,
            memberships__role=Membership.Role.ADMIN,
        )
        people += list(admins.exclude(email="").exclude(pk__in=[p.pk for p in people]).order_by("pk"))
    return people


def mail_alert(*, alert_id: int) -> int:
    """Mail one alert to its recipients, once (a compare-and-set on `mailed_at`); tenants in their organization's
    language, program staff in the portal's."""
    if not BudgetAlert.objects.filter(pk=alert_id, mailed_at__isnull=True).update(mailed_at=timezone.now()):
        return 0
    alert = BudgetAlert.objects.select_related("budget__program", "organization").get(pk=alert_id)
    messages, written = [], {}
    for person in recipients(alert):
        staff = StaffRole.of(person) is not None
        language = settings.LANGUAGE_CODE if staff or alert.organization is None else alert.organization.language
        if language not in written:
            written[language] = alert_email(alert, language)
        subject, body = written[language]
        messages.append(EmailMessage(subject, body, settings.DEFAULT_FROM_EMAIL, [person.email]))
    try:
        return get_connection().send_messages(messages) or 0 if messages else 0
    except Exception:
        BudgetAlert.objects.filter(pk=alert_id).update(mailed_at=None)
        raise


def alert_email(alert: BudgetAlert, language: str) -> tuple[str, str]:
    with translation.override(language):
        subject = _("[FM Program] Budget alert: %(text)s") % {"text": alert_text(alert)}
        organization = alert.organization
        url = portal_url("outcomes:org", organization.slug) if organization else portal_url("outcomes:program")
        body = render_to_string(
            "workloads/outcomes/email/budget_alert.txt",
            {"alert": alert, "text": alert_text(alert), "url": url, "usd": usd_text},
        )
    return subject, body
