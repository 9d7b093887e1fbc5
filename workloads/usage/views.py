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
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from portal.forms import apply_errors
from portal.pages import id_param, paginate, render_form, render_page
from portal.periods import iso_week, today
from tenants.access import (
    get_org_access_or_404,
    is_program_manager,
    require_program_manager,
    require_program_staff,
    visible_organizations,
)
from tenants.models import Allocation, CapacityPool, InstancePrice, Program
from workloads.usage import charts, exports
from workloads.usage.forms import RateCardForm
from workloads.usage.models import RateCardEntry, UsageDay, UsageRevision
from workloads.usage.periods import Period, PeriodError, parse_period
from workloads.usage.rates import MANAGERS_ONLY, add_rate, remove_rate
from workloads.usage.reports import (
    BilledCheck,
    Figures,
    allocation_use,
    billed_total,
    cluster_breakdown,
    daily,
    program_report,
    summed,
    weekly,
)

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
    weeks, monday = [], program.starts_on - timedelta(days=program.starts_on.weekday())
    while monday <= last:
        weeks.append((iso_week(monday), _("Week %(week)s") % {"week": iso_week(monday)}))
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
    # Hundreds of organizations: the ones needing attention first, the rest on further pages (the totals are
    # still the whole program's).
    page = paginate(request, sorted(report.rows, key=attention), USAGE_PAGE)
    context = {
        "program": program,
        "period": period,
        "period_error": error,
        "choices": period_choices(program),
        "report": report,
        "page": page,
        "charts": _cached_charts(report, program, UsageDay.objects.visible_to(request.user), list(page)),
    }
    status = 400 if error else 200
    return render_page(request, "workloads/usage/program.html", context, fragment="usage-body", status=status)


CHARTS_TTL = 600  # seconds: a renamed organization or a resized pool shows in the charts within this time


def attention(row) -> tuple:
    """Idle organizations first (the least used first), then those AWS billed apart from the computed cost, then
    the others from the least used; organizations with nothing allocated last, by name."""
    ratio = row.figures.utilization
    return (not (row.idle or row.billed_off), ratio is None, ratio or 0, row.organization.name)


def _cached_charts(report, program: Program | None, rows, shown: list) -> str:
    """The program-wide charts: rendered once per rollup (`UsageRevision`), language and page of organizations,
    then read from the cache, so the page costs the same with a year of history as with a week."""
    if program is None:
        return ""
    parts = (program.pk, program.starts_on, program.ends_on, today(), get_language(), UsageRevision.current())
    orgs = ",".join(str(row.organization.pk) for row in shown)
    key = "usage-charts:" + hashlib.sha256(f"{parts}|{len(report.rows)}|{orgs}".encode()).hexdigest()
    html = cache.get(key)
    if html is None:
        html = render_to_string("workloads/usage/_program_charts.html", _program_charts(report, program, rows, shown))
        cache.set(key, html, CHARTS_TTL)
    return html


def _minus(whole: Figures, part: Figures) -> Figures:
    """The figures of everything but `part` (the organizations not drawn one by one)."""
    return Figures(
        allocated=whole.allocated - part.allocated,
        running=whole.running - part.running,
        allocated_accelerators=whole.allocated_accelerators - part.allocated_accelerators,
        running_accelerators=whole.running_accelerators - part.running_accelerators,
        allocated_cost=whole.allocated_cost - part.allocated_cost,
        running_cost=whole.running_cost - part.running_cost,
    )


def _program_charts(report, program: Program, rows, shown: list) -> dict:
    """The heatmap and the cost bars draw the organizations of the table's page one by one and every other
    organization as one row, so they stay legible and their size bounded with 2,000 organizations. The others'
    figures are the program's (per pool, already summed for the pool charts) less the ones drawn."""
    first, last = program.starts_on, min(program.ends_on, today())
    org_rows = [
        charts.Row(r.organization.pk, r.organization.name, reverse("usage:org", args=[r.organization.slug]))
        for r in shown
    ]
    ids = [row.key for row in org_rows]
    weeks = charts.weeks_between(first, last)
    by_org_week = weekly(rows.filter(organization_id__in=ids), first=first, last=last, key="organization_id")
    by_pool_week = weekly(rows, first=first, last=last, key="pool_id")
    to_date = summed(rows.filter(organization_id__in=ids, day__gte=first, day__lte=last), "organization_id")
    others = len(report.rows) - len(shown)
    if others:
        program_week: dict = {}
        for (_pool, week), figures in by_pool_week.items():
            program_week.setdefault(week, Figures()).add(figures)
        shown_week: dict = {}
        for (_org, week), figures in by_org_week.items():
            shown_week.setdefault(week, Figures()).add(figures)
        for week, figures in program_week.items():
            by_org_week[(0, week)] = _minus(figures, shown_week.get(week, Figures()))
        program_total, shown_total = Figures(), Figures()
        for figures in program_week.values():
            program_total.add(figures)
        for figures in to_date.values():
            shown_total.add(figures)
        to_date[(0,)] = _minus(program_total, shown_total)
        other_row = charts.Row(0, _("Other organizations (%(count)s)") % {"count": f"{others:,}"})
    bars = sorted(
        ((row, to_date.get((row.key,), Figures())) for row in org_rows),
        key=lambda pair: (-pair[1].allocated_cost, pair[0].label),
    )
    return {
        "heatmap": charts.heatmap([*org_rows, other_row] if others else org_rows, weeks, by_org_week),
        "pool_charts": [
            {
                "pool": p.pool,
                "chart": charts.pool_lines(
                    p.pool.total_instances,
                    weeks,
                    {week: f for (pool_id, week), f in by_pool_week.items() if pool_id == p.pool.pk},
                    first=first,
                    as_of=timezone.now(),
                ),
            }
            for p in report.pools
        ],
        "cost_chart": charts.cost_bars(bars + ([(other_row, to_date[(0,)])] if others else [])),
    }


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
    rows = UsageDay.objects.for_org(org)
    by_pool = summed(rows.filter(day__gte=period.first, day__lte=period.last), "pool_id")
    total = Figures()
    for figures in by_pool.values():
        total.add(figures)
    allocations = list(
        Allocation.objects.for_org(org)
        .filter(starts_on__lte=today())
        .select_related("pool__instance_type")
        .order_by("-starts_on", "-pk")
    )
    weekly_chart = period.days > 120
    last = min(period.last, today())
    if weekly_chart:
        weeks = charts.weeks_between(period.first, last)
        by_week = weekly(rows, first=period.first, last=last, key="organization_id")
        by_week = {week: f for (_org, week), f in by_week.items()}
        chart = charts.daily_bars(weeks, by_week, first=period.first, as_of=timezone.now(), weekly=True)
    else:
        days = [period.first + timedelta(days=n) for n in range((last - period.first).days + 1)]
        by_day: dict = {}
        for (day, _pool), figures in daily(rows, first=period.first, last=last).items():
            by_day.setdefault(day, Figures()).add(figures)
        chart = charts.daily_bars(days, by_day, first=period.first, as_of=timezone.now())
    return {
        "access": access,
        "org": org,
        "program": program,
        "period": period,
        "period_error": error,
        "choices": period_choices(program),
        "total": total,
        "pools": [(pool, by_pool[(pool.pk,)]) for pool in _pools(by_pool)],
        "uses": [use for use in allocation_use(allocations).values()],
        "clusters": cluster_breakdown(org, period),
        "chart": chart,
        "weekly_chart": weekly_chart,
        "billed": BilledCheck(billed_total(org, period), total.running_cost),
        "as_of": timezone.now(),
    }


def _pools(by_pool: dict):
    ids = [pool_id for (pool_id,) in by_pool]
    return CapacityPool.objects.filter(pk__in=ids).select_related("instance_type").order_by("instance_type__api_name")


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
