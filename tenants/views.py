"""The landing pages: home (who goes where), the program's pools and organizations, the audit trail. The program's
landing page (its week at a glance) and an organization's home (its week) are workloads.program."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_safe

from portal.pages import paginate, varies_on_htmx
from tenants import audit_labels
from tenants.access import (
    is_program_manager,
    is_program_staff,
    require_program_staff,
    visible_organizations,
)
from tenants.filters import organization_filter
from tenants.filters import organization_suggestions as organization_suggestions_for
from tenants.models import AuditEvent, CapacityPool, Program


@login_required
@require_safe
def home(request):
    """Program managers land on the program overview, support engineers on their case queue (the cases of the
    organizations they lead first, then by severity and age); a tenant with one org lands on it."""
    if is_program_manager(request.user):
        return redirect("program-overview")
    if is_program_staff(request.user):
        return redirect(reverse("support:list") + "?sort=queue")
    organizations = list(visible_organizations(request.user))
    if len(organizations) == 1:
        return redirect("org-home", org_slug=organizations[0].slug)
    context = {"organizations": organizations, "contact_email": settings.PROGRAM_CONTACT_EMAIL}
    return render(request, "tenants/home.html", context)


@login_required
def program_organizations(request):
    """The program's pools and organizations (linked from the landing page, which lives in workloads.program)."""
    require_program_staff(request.user, _("The program overview is for program staff."))
    program = Program.objects.first()
    organizations = (
        visible_organizations(request.user)
        .select_related("lead_engineer")
        .annotate(member_count=Count("memberships"))
        .order_by("name")
    )
    pools = CapacityPool.objects.select_related("instance_type", "program").order_by(
        "instance_type__api_name", "region"
    )
    if program is not None:
        pools = pools.filter(program=program)
    return render(
        request,
        "tenants/program_organizations.html",
        {"program": program, "organizations": organizations, "pools": pools},
    )


@login_required
def audit_log(request):
    require_program_staff(request.user)
    events = AuditEvent.objects.visible_to(request.user).select_related("actor", "organization")
    org = organization_filter(request)
    if org.organization:
        events = events.filter(organization_id=org.organization["pk"])
    page = paginate(request, events if org.valid else events.none(), 50)
    page.object_list = list(page.object_list)
    audit_labels.link(page.object_list, request.user)
    context = {"page": page, "org_filter": org}
    return render(request, "tenants/audit_log.html", context, status=200 if org.valid else 400)


@login_required
@require_safe
def organization_suggestions(request):
    """The organization search field's suggestions: at most a few organizations whose name or slug holds what was
    typed (?org=), of those the person may see — every one for program staff, a tenant's own for a tenant."""
    suggestions = organization_suggestions_for(request.user, request.GET.get("org", ""))
    response = render(request, "tenants/_org_suggestions.html", {"suggestions": suggestions})
    return varies_on_htmx(response)
