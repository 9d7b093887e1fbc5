"""Support case pages: the case list (a tenant's own, every org's for staff), opening a case, a case's page with
its chronological history, comments and changes. Cases come from `SupportCase.objects.visible_to(user)`:
another organization's case is a 404; internal notes are read through `CaseEvent.objects.readable_by(user)`.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import Case, When
from django.shortcuts import get_object_or_404, redirect
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from portal.forms import apply_errors
from portal.pages import id_param, is_fragment, paginate, render_form, render_page, sort_by
from tenants.access import acting_organizations, get_org_access_or_404, is_program_staff
from workloads.support.filters import SupportCaseFilter
from workloads.support.forms import CaseForm, CaseUpdateForm, CommentForm
from workloads.support.models import SupportCase
from workloads.support.services import add_comment, case_history, open_case, update_case

PAGE_SIZE = 50
TEMPLATE = "workloads/support/case_detail.html"

CASE_SORTS = {
    # A support engineer's queue: the organizations they lead first, then the most severe, then the oldest.
    "queue": ("led_by_me", "severity", "created_at", "pk"),
    "opened": ("created_at", "pk"),
    "updated": ("updated_at", "pk"),
    "severity": ("severity", "-created_at"),
    "status": ("status", "-created_at"),
    "org": ("organization__name", "-created_at"),
}


@login_required
@require_GET
def case_list(request):
    """Support cases: a tenant's own, or every org's for program staff. Active cases first by default."""
    data = request.GET.copy()
    if "state" not in data:
        data["state"] = "active"
    cases = (
        SupportCase.objects.visible_to(request.user)
        .select_related("organization", "assignee", "workload", "cluster")
        .annotate(led_by_me=Case(When(organization__lead_engineer=request.user.pk, then=0), default=1))
    )
    filterset = SupportCaseFilter(data, queryset=cases, request=request)
    cases = filterset.qs if filterset.is_valid() else cases.none()
    cases, sort = sort_by(cases, CASE_SORTS, request.GET.get("sort", ""), "-updated")
    staff = is_program_staff(request.user)
    context = {
        "filterset": filterset,
        "page": paginate(request, cases, PAGE_SIZE),
        "sort": sort,
        "is_staff": staff,
        "case_orgs": acting_organizations(request.user).order_by("name"),
        "now": timezone.now(),
    }
    return render_page(
        request,
        "workloads/support/case_list.html",
        context,
        fragment="case-table",
        status=400 if filterset.errors else 200,
    )


@login_required
def case_create(request, org_slug: str):
    access = get_org_access_or_404(request.user, org_slug)
    access.require(access.can_write, _("You cannot open cases for this organization."))
    org = access.organization
    # Prefilled from the page the user came from: a workload's, a cluster's or one of its nodes'.
    initial = {name: id_param(request.GET[name]) for name in ("workload", "cluster") if request.GET.get(name)}
    if node := request.GET.get("node", "")[:255]:
        initial.update(node=node, category=SupportCase.Category.NODE_HEALTH)
    form = CaseForm(request.POST or None, organization=org, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            case = open_case(
                user=request.user,
                organization=org,
                title=data["title"],
                description=data["description"],
                category=data["category"],
                severity=data["severity"],
                workload=data["workload"],
                cluster=data["cluster"],
                node=data["node"],
            )
        except ValidationError as error:
            apply_errors(form, error)
        else:
            return redirect("support:detail", pk=case.pk)
    context = {"form": form, "org": org}
    return render_form(request, "workloads/support/case_form.html", context, invalid=bool(form.errors))


def _visible_case(request, pk: int) -> SupportCase:
    cases = SupportCase.objects.visible_to(request.user).select_related(
        "organization__lead_engineer", "assignee", "opened_by", "workload", "cluster", "node"
    )
    return get_object_or_404(cases, pk=pk)


def _case_context(request, case: SupportCase, *, comment_form=None, update_form=None) -> dict:
    staff = is_program_staff(request.user)
    return {
        "case": case,
        "org": case.organization,
        "events": case_history(request.user, case),  # tenants never see internal entries
        "is_staff": staff,
        "can_write": get_org_access_or_404(request.user, case.organization.slug).can_write,
        "comment_form": comment_form or CommentForm(staff=staff),
        "update_form": update_form or CaseUpdateForm(case=case, staff=staff),
        "now": timezone.now(),
    }


@login_required
@require_GET
def case_detail(request, pk: int):
    case = _visible_case(request, pk)
    # The history polls for itself alone; the other htmx requests swap the whole case.
    fragment = "case-history" if request.GET.get("part") == "history" else "case-body"
    return render_page(request, TEMPLATE, _case_context(request, case), fragment=fragment)


case_detail.tenant_model = SupportCase


@login_required
@require_POST
def case_comment(request, pk: int):
    case = _visible_case(request, pk)
    _require_acting(request, case)
    staff = is_program_staff(request.user)
    form = CommentForm(request.POST, staff=staff)
    if form.is_valid():
        try:
            add_comment(
                user=request.user, case=case, body=form.cleaned_data["body"], internal=form.cleaned_data["internal"]
            )
        except ValidationError as error:
            apply_errors(form, error)
        else:
            if is_fragment(request):
                context = _case_context(request, _visible_case(request, pk))
                return render_page(request, TEMPLATE, context, fragment="case-body")
            return redirect("support:detail", pk=case.pk)
    context = _case_context(request, case, comment_form=form)
    return render_form(request, TEMPLATE, context, fragment="case-body", invalid=True)


case_comment.tenant_model = SupportCase


def _require_acting(request, case: SupportCase) -> None:
    """A 403 before the form is read for who may not act on the org's cases (a viewer)."""
    access = get_org_access_or_404(request.user, case.organization.slug)
    access.require(access.can_write, _("You cannot act on this organization's support cases."))


@login_required
@require_POST
def case_update(request, pk: int):
    case = _visible_case(request, pk)
    _require_acting(request, case)
    staff = is_program_staff(request.user)
    form = CaseUpdateForm(request.POST, case=case, staff=staff)
    if form.is_valid():
        try:
            update_case(user=request.user, case=case, comment=form.cleaned_data["comment"], **form.changes)
        except ValidationError as error:
            apply_errors(form, error)
        else:
            if is_fragment(request):
                context = _case_context(request, _visible_case(request, pk))
                return render_page(request, TEMPLATE, context, fragment="case-body")
            return redirect("support:detail", pk=case.pk)
    context = _case_context(request, case, update_form=form)
    return render_form(request, TEMPLATE, context, fragment="case-body", invalid=True)


case_update.tenant_model = SupportCase
