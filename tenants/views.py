from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _

from tenants.access import get_org_access_or_404, is_program_staff, visible_organizations
from tenants.models import CapacityPool, Program


@login_required
def home(request):
    """Staff land on the program overview; a tenant with one org lands on it."""
    if is_program_staff(request.user):
        return redirect("program-overview")
    organizations = list(visible_organizations(request.user))
    if len(organizations) == 1:
        return redirect("org-home", org_slug=organizations[0].slug)
    return render(request, "tenants/home.html", {"organizations": organizations})


@login_required
def org_home(request, org_slug: str):
    access = get_org_access_or_404(request.user, org_slug)
    org = access.organization
    members = org.memberships.select_related("user").order_by("user__username")
    return render(request, "tenants/org_home.html", {"access": access, "org": org, "members": members})


@login_required
def program_overview(request):
    if not is_program_staff(request.user):
        raise PermissionDenied(_("The program overview is for program staff."))
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
        "tenants/program_overview.html",
        {"program": program, "organizations": organizations, "pools": pools},
    )
