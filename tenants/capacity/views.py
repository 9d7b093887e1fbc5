"""A tenant's capacity pages: its allocations and requests, the request form with its live estimate, a request's
page with its history, and the submit / withdraw actions. Program staff's pages are in staff_views."""

from __future__ import annotations

from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from portal.forms import apply_errors
from portal.pages import choice_param, fragment_for, id_param, paginate, render_form, render_page
from portal.periods import today
from portal.tables import sort_table
from tenants.access import get_org_access_or_404
from tenants.capacity.allocations import allocation_rows
from tenants.capacity.estimate import MAX_INSTANCES
from tenants.capacity.forms import CapacityRequestForm, ChangeRequestForm, in_billions, pool_value
from tenants.capacity.pools import estimate_for, pool_free, request_estimate
from tenants.capacity.requests import (
    Plan,
    create_request,
    edit_draft,
    require_member,
    submit_request,
    withdraw_request,
)
from tenants.capacity.tables import AllocationTable
from tenants.models import Allocation, AuditEvent, CapacityRequest, Program

PAGE_SIZE = 25
# Service field names → the form fields that show their errors (None: at the top of the form).
FORM_FIELD = {
    "parameter_count": "parameters_b",
    "training_tokens": "tokens_b",
    "base_allocation": None,
    "instance_type": "pool",
    "region": "pool",
}


@login_required
@require_safe
def capacity(request, org_slug: str):
    """A tenant's allocations and requests."""
    access = get_org_access_or_404(request.user, org_slug)
    org = access.organization
    allocations = Allocation.objects.for_org(org).select_related("pool__instance_type").order_by("-starts_on", "-pk")
    requests = CapacityRequest.objects.for_org(org).select_related("pool__instance_type", "allocation")
    status = choice_param(request, "status", CapacityRequest.Status.values)
    if status:
        requests = requests.filter(status=status)
    page = paginate(request, requests if status.valid else requests.none(), PAGE_SIZE)
    # Newest first, a page at a time: an org with hundreds of allocations must not make the page grow with them.
    # Its columns sort (?allocations_sort=), each by an index that starts with the organization.
    table = AllocationTable(allocations, prefix="allocations_", order_by="-window", exclude=("organization",))
    table = sort_table(request, table, per_page=PAGE_SIZE)
    allocation_page = table.page
    context = {
        "access": access,
        "org": org,
        "allocation_table": table,
        "allocation_rows": allocation_rows(allocation_page.object_list, on=today()),
        "allocation_page": allocation_page,
        "page": page,
        "statuses": CapacityRequest.Status.choices,
        "status": status,
    }
    status_code = 200 if status.valid else 400
    fragment = fragment_for(request, "request-rows", by_target={"allocation-rows": "allocation-rows"})
    return render_page(request, "tenants/capacity.html", context, fragment=fragment, status=status_code)


ESTIMATE_FIELDS = {"pool", "instance_count", "starts_on", "ends_on", "parameters_b", "tokens_b", "expected_mfu"}


def _estimate_context(form, *, instance_type=None, region=None) -> dict:
    """The live estimate for whatever the form holds so far; tolerant of a half-filled form."""
    data = form.cleaned_data if form.is_bound and hasattr(form, "cleaned_data") else {}
    instance_type = instance_type or data.get("instance_type")
    region = region or data.get("region")
    needed = ("instance_count", "starts_on", "ends_on")
    # Say what stands in the way: as the tenant types, this panel is the only part of the page that updates.
    # Any invalid input blocks it (an out-of-range utilization must not be estimated at the default); a field
    # not filled in yet is no error here, only what the estimate still waits for.
    problems = [
        f"{form.fields[name].label}: {errors[0]}"
        for name, errors in form.errors.items()
        if name in form.fields and name in ESTIMATE_FIELDS and str(form.data.get(name, "")).strip()
    ]
    if problems or not (form.parameter_count and instance_type and region and all(data.get(k) for k in needed)):
        return {"estimate": None, "estimate_problems": problems}
    result = estimate_for(
        instance_type=instance_type,
        region=region,
        program=Program.objects.first(),
        parameters=form.parameter_count,
        tokens=form.training_tokens,
        instance_count=data["instance_count"],
        starts_on=data["starts_on"],
        ends_on=data["ends_on"],
        mfu=data.get("expected_mfu"),
    )
    free = pool_free(instance_type, region, starts_on=data["starts_on"], ends_on=data["ends_on"])
    return {
        "estimate": result,
        "estimate_type": instance_type,
        "program": Program.objects.first(),
        "free": free,
        "max_instances": MAX_INSTANCES,
    }


@login_required
@require_http_methods(["GET", "POST"])
def capacity_request_new(request, org_slug: str):
    access = get_org_access_or_404(request.user, org_slug)
    org = access.organization
    require_member(access)
    base = None
    if allocation_id := request.GET.get("allocation") or request.POST.get("allocation"):
        if (allocation_id := id_param(allocation_id)) is None:
            raise Http404
        base = get_object_or_404(
            Allocation.objects.for_org(org).select_related("pool__instance_type"), pk=allocation_id
        )
    initial = {}
    if base and request.GET.get("kind") == CapacityRequest.Kind.ENLARGEMENT:
        initial |= {
            "instance_count": 1,
            "kind": CapacityRequest.Kind.ENLARGEMENT,
            "starts_on": max(base.starts_on, today()),
            "ends_on": base.ends_on,
        }
    elif base:
        initial |= {
            "instance_count": base.instance_count,
            "kind": CapacityRequest.Kind.EXTENSION,
            "starts_on": base.ends_on + timedelta(days=1),
            "ends_on": base.ends_on + timedelta(days=30),
        }

    def save(plan: Plan, submit: bool) -> CapacityRequest:
        return create_request(user=request.user, organization=org, plan=plan, base_allocation=base, submit=submit)

    return _request_form_page(request, access, base=base, initial=initial, kind=CapacityRequest.Kind.NEW, save=save)


@login_required
@require_http_methods(["GET", "POST"])
def capacity_request_edit(request, org_slug: str, pk: int):
    """A draft is rewritten in the same form it was written in; a submitted request is frozen."""
    access = get_org_access_or_404(request.user, org_slug)
    org = access.organization
    draft = get_object_or_404(
        CapacityRequest.objects.for_org(org).select_related(
            "pool__instance_type", "pool__program", "base_allocation__pool__instance_type"
        ),
        pk=pk,
    )
    require_member(access)
    if draft.status != CapacityRequest.Status.DRAFT:
        messages.error(
            request,
            _("Only a draft can be edited; this request is %(status)s.")
            % {"status": draft.get_status_display().lower()},
        )
        return redirect("capacity-request", org_slug=org.slug, pk=draft.pk)

    def save(plan: Plan, submit: bool) -> CapacityRequest:
        return edit_draft(user=request.user, capacity_request=draft, plan=plan, submit=submit)

    return _request_form_page(
        request,
        access,
        base=draft.base_allocation,
        initial=_draft_initial(draft),
        kind=draft.kind,
        save=save,
        draft=draft,
        estimate={
            "estimate": request_estimate(draft),
            "estimate_type": draft.pool.instance_type,
            "program": draft.pool.program,
        },
    )


def _request_form_page(request, access, *, base, initial, kind, save, draft=None, estimate=None):
    """The request form, new or a draft's: on a valid POST `save(plan, submit)` and go to the request;
    otherwise the form again, with its errors and the estimate for what it holds."""
    form_class = ChangeRequestForm if base else CapacityRequestForm
    extra = {"allocation": base} if base else {}
    if request.method == "POST":
        form = form_class(request.POST, **extra)
        if form.is_valid():
            try:
                capacity_request = save(_plan(form, base, default_kind=kind), "submit" in request.POST)
            except ValidationError as error:
                apply_errors(form, error, FORM_FIELD)
            else:
                return _saved(request, capacity_request)
        fixed = {"instance_type": base.pool.instance_type, "region": base.pool.region} if base else {}
        estimate = _estimate_context(form, **fixed)
    else:
        form = form_class(initial=initial, **extra)
    context = {"access": access, "org": access.organization, "form": form, "base": base, "draft": draft}
    return render_form(
        request, "tenants/capacity_request_form.html", context | (estimate or {}), invalid=bool(form.errors)
    )


capacity_request_edit.tenant_model = CapacityRequest


def _plan(form, base: Allocation | None, *, default_kind: str) -> Plan:
    """The plan a request form holds (its sizes typed in billions, counted here in units)."""
    sizes = {"parameter_count": form.parameter_count, "training_tokens": form.training_tokens}
    return Plan.from_data(form.cleaned_data | sizes, base=base, default_kind=default_kind)


def _draft_initial(draft: CapacityRequest) -> dict:
    return {
        "pool": pool_value(draft.pool.instance_type, draft.pool.region),
        "kind": draft.kind,
        "instance_count": draft.instance_count,
        "starts_on": draft.starts_on,
        "ends_on": draft.ends_on,
        "start_slack_days": draft.start_slack_days,
        "justification": draft.justification,
        "parameters_b": in_billions(draft.parameter_count),
        "tokens_b": in_billions(draft.training_tokens),
        "framework": draft.framework,
        "expected_mfu": draft.expected_mfu,
    }


def _saved(request, capacity_request: CapacityRequest):
    if capacity_request.status == CapacityRequest.Status.SUBMITTED:
        messages.success(request, _("Request %(id)s submitted for review.") % {"id": capacity_request.number})
    else:
        messages.success(request, _("Draft %(id)s saved.") % {"id": capacity_request.number})
    return redirect("capacity-request", org_slug=capacity_request.organization.slug, pk=capacity_request.pk)


@login_required
@require_POST
def capacity_estimate(request, org_slug: str):
    """htmx: the estimate panel of the request form, recomputed as the tenant types."""
    get_org_access_or_404(request.user, org_slug)
    form = CapacityRequestForm(request.POST)
    form.is_valid()  # a half-filled form still yields the fields it has
    return render(request, "tenants/capacity_request_form.html#estimate", _estimate_context(form))


@login_required
@require_safe
def capacity_request_detail(request, org_slug: str, pk: int):
    access = get_org_access_or_404(request.user, org_slug)
    capacity_request = get_object_or_404(
        CapacityRequest.objects.for_org(access.organization).select_related(
            "pool__instance_type", "pool__program", "created_by", "decided_by", "allocation", "base_allocation"
        ),
        pk=pk,
    )
    history = (
        AuditEvent.objects.for_org(access.organization)
        .filter(target_type="capacityrequest", target_id=capacity_request.pk)
        .select_related("actor")
        .order_by("created_at", "pk")
    )
    context = {
        "access": access,
        "org": access.organization,
        "capacity_request": capacity_request,
        "estimate": request_estimate(capacity_request),
        "program": capacity_request.pool.program,
        "history": history,
    }
    return render(request, "tenants/capacity_request_detail.html", context)


capacity_request_detail.tenant_model = CapacityRequest


@login_required
@require_POST
def capacity_request_action(request, org_slug: str, pk: int, action: str):
    """Submit or withdraw a request (tenant actions)."""
    access = get_org_access_or_404(request.user, org_slug)
    capacity_request = get_object_or_404(CapacityRequest.objects.for_org(access.organization), pk=pk)
    service = {"submit": submit_request, "withdraw": withdraw_request}.get(action)
    if service is None:
        raise Http404
    try:
        service(user=request.user, capacity_request=capacity_request)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        done = {"submit": _("Request %(id)s submitted for review."), "withdraw": _("Request %(id)s withdrawn.")}
        messages.success(request, done[action] % {"id": capacity_request.number})
    return redirect("capacity-request", org_slug=access.organization.slug, pk=capacity_request.pk)


capacity_request_action.tenant_model = CapacityRequest
