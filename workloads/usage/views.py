"""Usage pages: the program's usage dashboard (staff), one organization's usage (its members and staff), their
CSV exports, and the rate card. The period is in the URL (?period=2027-W05, 2027-02, program, or range with
start and end), so a view can be shared; htmx swaps the body when the period changes."""

from __future__ import annotations

import hashlib
from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from portal.forms import apply_errors
from portal.pages import id_param, render_form, render_page
from portal.periods import iso_week, today
from portal.tables import DatabaseRows, sort_table
from tenants.access import (
    get_org_access_or_404,
    is_program_manager,
    require_program_manager,
    require_program_staff,
    visible_organizations,
)
from tenants.models import Allocation, InstancePrice, Program
from workloads.training.program import organization_training
from workloads.usage import charts, exports
from workloads.usage.allocations import allocation_use
from workloads.usage.forms import RateCardForm
from workloads.usage.models import RateCardEntry, UsageRevision
from workloads.usage.over_time import cluster_breakdown
from workloads.usage.periods import Period, PeriodError, parse_period
from workloads.usage.rates import MANAGERS_ONLY, add_rate, remove_rate
from workloads.usage.reports import ProgramReport, billed_check, org_report, program_report
from workloads.usage.tables import OrgUsageTable, PoolUsageTable, billed_through_unit

USAGE_PAGE = 20  # organizations per page of the program table; the heatmap shows the same ones and "the others"

STAFF_ONLY = _("Usage across the program is for program staff; your organization's usage is on its own page.")


def _period(request, program: Program | None) -> tuple[Period, PeriodError | None]:
    """The period asked for, or the current week and the error to show when the input makes no sense."""
    try:
        return parse_period(request.GET, program=program, today=today()), None
    except PeriodError as error:
        return parse_period({}, program=program, today=today()), error


def _export_period(request, program: Program | None) -> Period | HttpResponse:
    """An export's period, or a plain-text 400 saying what is wrong (a download has no page to show it on)."""
    try:
        return parse_period(request.GET, program=program, today=today())
    except PeriodError as error:
        return HttpResponse(f"{error.field}: {error.message}", status=400, content_type="text/plain; charset=utf-8")


def period_choices(program: Program | None) -> list[tuple[str, str]]:
    """The weeks and months of the program so far (newest first), then the program to date and a range."""
    if program is None:
        return []
    last = min(program.ends_on, today())
    weeks, monday, label = [], program.starts_on - timedelta(days=program.starts_on.weekday()), _("Week %(week)s")
    while monday <= last:  # 52 a year: the label translated once
        week = iso_week(monday)
        weeks.append((week, label % {"week": week}))
        monday += timedelta(days=7)
    months, first = [], program.starts_on.replace(day=1)
    while first <= last:
        months.append((f"{first:%Y-%m}", f"{first:%Y-%m}"))
        first = (first + timedelta(days=32)).replace(day=1)
    return [*reversed(weeks), *reversed(months), ("program", _("Program to date")), ("range", _("Custom range…"))]


@login_required
@require_GET
def program_usage(request):
    """Program staff: per organization, allocated against running and what it costs, for a period; the
    program's charts over time."""
    require_program_staff(request.user, STAFF_ONLY)
    program = Program.objects.first()
    period, error = _period(request, program)
    organizations = visible_organizations(request.user)
    report = program_report(period=period, organizations=organizations, program=program)
    # Hundreds of organizations: sorted (attention first unless a header sorts) and cut to the page in the
    # database; only the page's rows are built (the totals are still the whole program's).
    rows = DatabaseRows(report.ranked, records=report.page_rows, count=lambda: report.count, tie_break=("name", "pk"))
    org_table = billed_through_unit(
        sort_table(request, OrgUsageTable(rows), per_page=USAGE_PAGE), billed_through=report.billed_through
    )
    context = {
        "program": program,
        "period": period,
        "period_error": error,
        "choices": period_choices(program),
        "report": report,
        "org_table": org_table,
        "pool_table": sort_table(request, PoolUsageTable(report.pools, prefix="pools_")),
        "charts": _cached_charts(report, request.user, shown=org_table.page.object_list),
    }
    status = 400 if error else 200
    return render_page(request, "workloads/usage/program.html", context, fragment="usage-body", status=status)


CHARTS_TTL = 600  # seconds: a renamed organization or a resized pool shows in the charts within this time


def _cached_charts(report: ProgramReport, user, *, shown: list) -> str:
    """The program-wide charts for the report's period and the table's page of organizations (charts.program_charts):
    rendered once per rollup (`UsageRevision`), period, language and page, then read from the cache."""
    program, period = report.program, report.period
    if program is None:
        return ""
    revision = UsageRevision.current()
    parts = (program.pk, program.starts_on, program.ends_on, today(), get_language(), revision, period.query_string)
    orgs = ",".join(str(row.organization.pk) for row in shown)
    key = "usage-charts:" + hashlib.sha256(f"{parts}|{report.count}|{orgs}".encode()).hexdigest()
    html = cache.get(key)
    if html is None:
        context = charts.program_charts(report, user=user, shown=shown, as_of=timezone.now())
        html = render_to_string("workloads/usage/_program_charts.html", context)
        cache.set(key, html, CHARTS_TTL)
    return html


@login_required
@require_GET
def program_usage_export(request):
    """The program table as CSV: the same rows and figures as the page, to the cent."""
    require_program_staff(request.user, STAFF_ONLY)
    program = Program.objects.first()
    period = _export_period(request, program)
    if isinstance(period, HttpResponse):
        return period
    report = program_report(period=period, organizations=visible_organizations(request.user), program=program)
    return exports.program_csv(report)


def _org_context(request, org_slug: str) -> dict:
    access = get_org_access_or_404(request.user, org_slug)
    org = access.organization
    program = Program.objects.first()
    period, error = _period(request, program)
    pools, total = org_report(org, period=period)
    allocations = list(
        Allocation.objects.for_org(org)
        .filter(starts_on__lte=today())
        .select_related("pool__instance_type")
        .order_by("-starts_on", "-pk")
    )
    return {
        "access": access,
        "org": org,
        "program": program,
        "period": period,
        "period_error": error,
        "choices": period_choices(program),
        "total": total,
        "pools": pools,
        "uses": list(allocation_use(allocations).values()),
        "clusters": cluster_breakdown(org, period),
        "chart": charts.org_chart(org, period=period, as_of=timezone.now()),
        "weekly_chart": period.days > charts.WEEKLY_AFTER_DAYS,
        "billed": billed_check(org, period, total),
        "as_of": timezone.now(),
        "training": organization_training(org),
    }


@login_required
@require_GET
def org_usage(request, org_slug: str):
    """One organization's usage: per allocation to date with a projection, per cluster, per day."""
    context = _org_context(request, org_slug)
    status = 400 if context["period_error"] else 200
    return render_page(request, "workloads/usage/org.html", context, fragment="usage-body", status=status)


@login_required
@require_GET
def org_usage_export(request, org_slug: str):
    """The organization's daily usage per pool as CSV."""
    access = get_org_access_or_404(request.user, org_slug)
    program = Program.objects.first()
    period = _export_period(request, program)
    if isinstance(period, HttpResponse):
        return period
    return exports.org_daily_csv(access.organization, period, program)


@login_required
def rate_card(request):
    """The rate card: program staff read it; program managers add and remove rates (the days they cover are
    re-priced at once)."""
    require_program_staff(request.user)
    manager = is_program_manager(request.user)
    form = RateCardForm(request.POST or None)
    if request.method == "POST":
        require_program_manager(request.user, MANAGERS_ONLY)
        if "remove" in request.POST:
            entry = get_object_or_404(RateCardEntry, pk=id_param(request.POST["remove"]))
            remove_rate(user=request.user, entry=entry)
            messages.success(request, _("Rate removed; the days it covered are re-priced."))
            return redirect("usage:rates")
        if form.is_valid():
            try:
                add_rate(user=request.user, **form.cleaned_data)
            except ValidationError as error:
                apply_errors(form, error)
            else:
                messages.success(request, _("Rate added; the days it covers are re-priced."))
                return redirect("usage:rates")
    context = {
        "entries": RateCardEntry.objects.select_related("instance_type", "created_by"),
        "catalog": InstancePrice.objects.select_related("instance_type").order_by("instance_type__api_name", "region"),
        "form": form,
        "can_edit": manager,
    }
    return render_form(request, "workloads/usage/rates.html", context, invalid=bool(form.errors))
