"""The landing pages of the week: the program's at a glance for program staff (`/program/`), and an
organization's for its team (`/orgs/<slug>/`: its week, then its account and members)."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_safe

from portal.periods import today
from tenants.access import get_org_access_or_404, require_program_staff
from tenants.models import Organization, Program
from tenants.service_accounts.models import people
from workloads.outcomes.models import BudgetAlert
from workloads.program.org_week import tenant_week
from workloads.program.week import glance
from workloads.usage.periods import Period


def weeks(day) -> list[Period]:
    """The last closed ISO week and this one so far."""
    monday = day - timedelta(days=day.weekday())
    return [
        Period("week", monday - timedelta(days=7), monday - timedelta(days=1)),
        Period("week", monday, monday + timedelta(days=6)),
    ]


@login_required
@require_GET
def program_overview(request):
    """The program's Monday question: who used what we gave them, what did it cost, what is broken."""
    require_program_staff(request.user, _("The program overview is for program staff."))
    program = Program.objects.first()
    day = today()
    context = {
        "glance": glance(user=request.user, program=program, weeks=weeks(day), today=day, as_of=timezone.now()),
        "program": program,
        "today": day,
        # Budget alerts stand until spend falls back under them (workloads.outcomes.alerts).
        "budget_alerts": BudgetAlert.objects.visible_to(request.user)
        .filter(cleared_at__isnull=True)
        .select_related("organization", "budget__program"),
    }
    return render(request, "workloads/program/landing.html", context)


@login_required
@require_safe
def org_home(request, org_slug: str):
    """The tenant team's Monday question, for their organization: what they used of their allocation and what it
    cost, what waits for them (requests, cases), what is broken (clusters, incidents), how training goes."""
    access = get_org_access_or_404(request.user, org_slug)
    org = access.organization
    day = today()
    program = Program.objects.first()
    context = {
        "access": access,
        "org": org,
        "program": program,
        "today": day,
        "week": tenant_week(org, program=program, weeks=weeks(day), today=day, as_of=timezone.now()),
        "members": people(org.memberships).select_related("user").order_by("user__username"),
    }
    return render(request, "tenants/org_home.html", context)


org_home.tenant_model = Organization
