"""Program staff's capacity pages: the review queue where managers decide, the pool timeline, every
allocation (revoke for managers)."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import Count, F, Window
from django.db.models.functions import RowNumber
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from portal.forms import apply_errors
from portal.pages import bounded_paginate, choice_param, is_fragment, render_form, render_page, varies_on_htmx
from portal.periods import today
from portal.tables import sort_table
from tenants.access import is_program_manager, require_program_manager, require_program_staff, visible_organizations
from tenants.capacity import pricing
from tenants.capacity.allocations import allocation_rows, revoke_allocation
from tenants.capacity.charts import MAX_SERIES, pool_chart
from tenants.capacity.decisions import approve_request, reject_request
from tenants.capacity.forms import DecisionForm, RevokeForm
from tenants.capacity.ledger import allocated_by_day
from tenants.capacity.pools import catalog_prices, largest_holders, pool_headroom, pool_spans, request_estimate
from tenants.capacity.revocation import clusters_to_delete
from tenants.capacity.tables import AllocationTable
from tenants.capacity.usage import usage
from tenants.filters import organization_filter
from tenants.models import Allocation, CapacityPool, CapacityRequest

PAGE_SIZE = 25
# The allocation's own fields the allocations page reads (cells, figures, revoke button, usage accounting).
ALLOCATION_ROW_FIELDS = (
    "id", "organization", "pool", "instance_count", "starts_on", "ends_on", "status", "revoke_reason",
    "revoked_at",
)  # fmt: skip
ORG_ALLOCATIONS_SHOWN = 5  # per review card; the rest are counted


def _review_rows(user, capacity_requests: list[CapacityRequest]) -> list[dict]:
    """Everything the queue shows beside each request, in a fixed number of queries for the page:
    one for the pools' ledger days over the page's windows, one for the orgs' allocations, one for prices."""
    if not capacity_requests:
        return []
    pool_ids = sorted({r.pool_id for r in capacity_requests})
    by_day = allocated_by_day(
        pool_ids,
        first=min(r.starts_on for r in capacity_requests),
        last=max(r.ends_on for r in capacity_requests),
    )
    # Each card lists the org's first few current allocations and counts the rest: per-page data only, however
    # many allocations an organization holds (a window function picks the few, one count query the rest).
    holding = (
        Allocation.objects.visible_to(user)
        .filter(organization_id__in={r.organization_id for r in capacity_requests})
        .holding_capacity()
        .filter(ends_on__gte=today())
    )
    current: dict[int, list[Allocation]] = defaultdict(list)
    ranked = holding.annotate(
        rank=Window(RowNumber(), partition_by=F("organization_id"), order_by=(F("starts_on").asc(), F("id").asc()))
    )
    for allocation in ranked.filter(rank__lte=ORG_ALLOCATIONS_SHOWN).select_related("pool__instance_type"):
        current[allocation.organization_id].append(allocation)
    held = dict(holding.values_list("organization_id").annotate(n=Count("id")).values_list("organization_id", "n"))
    prices = catalog_prices()
    rates = pricing.rates(prices)  # the rate card, loaded once for the page
    # How the org used what it already has: running ÷ allocated over the last two weeks (usage accounting).
    recent = usage().org_utilization(
        {r.organization_id for r in capacity_requests}, first=today() - timedelta(days=13), last=today()
    )
    rows = []
    for capacity_request in capacity_requests:
        pool = capacity_request.pool
        room = pool_headroom(
            pool, by_day[pool.pk], starts_on=capacity_request.starts_on, ends_on=capacity_request.ends_on
        )
        estimate = request_estimate(capacity_request, prices=prices, rates=rates)
        rows.append(
            {
                "request": capacity_request,
                "room": room,
                "fits": capacity_request.instance_count <= room.free,
                "org_allocations": current[capacity_request.organization_id],
                "org_allocations_more": held.get(capacity_request.organization_id, 0)
                - len(current[capacity_request.organization_id]),
                "recent_utilization": recent.get(capacity_request.organization_id),
                "estimate": estimate,
                "form": DecisionForm(
                    initial={
                        "instance_count": capacity_request.instance_count,
                        "starts_on": capacity_request.starts_on,
                        "ends_on": capacity_request.ends_on,
                    },
                    prefix=f"r{capacity_request.pk}",
                ),
            }
        )
    return rows


@login_required
def review_queue(request):
    require_program_staff(request.user)
    submitted = (
        CapacityRequest.objects.visible_to(request.user)
        .filter(status=CapacityRequest.Status.SUBMITTED)
        .select_related("organization", "pool__instance_type", "pool__program", "created_by", "base_allocation")
        .order_by("submitted_at", "pk")
    )
    page = bounded_paginate(request, submitted, PAGE_SIZE)
    context = {
        "page": page,
        "rows": _review_rows(request.user, list(page.object_list)),
        "can_decide": is_program_manager(request.user),
    }
    return render(request, "tenants/review_queue.html", context)


@login_required
@require_POST
def decide(request, pk: int):
    """A manager's decision on one request; an htmx post swaps the queue row for the outcome."""
    capacity_request = get_object_or_404(
        CapacityRequest.objects.visible_to(request.user).select_related(
            "organization", "pool__instance_type", "pool__program"
        ),
        pk=pk,
    )
    require_program_manager(request.user, _("Only a program manager can decide on capacity."))
    form = DecisionForm(request.POST, prefix=f"r{capacity_request.pk}")
    outcome, error = None, None
    if form.is_valid():
        data = form.cleaned_data
        try:
            if data["decision"] == "approve":
                outcome = approve_request(
                    user=request.user,
                    capacity_request=capacity_request,
                    instance_count=data.get("instance_count"),
                    starts_on=data.get("starts_on"),
                    ends_on=data.get("ends_on"),
                    comment=data.get("comment", ""),
                )
            else:
                outcome = reject_request(
                    user=request.user, capacity_request=capacity_request, comment=data.get("comment", "")
                )
        except ValidationError as validation_error:
            error = " ".join(validation_error.messages)
    else:
        error = " ".join(
            f"{form.fields[field].label if field in form.fields else ''}: {' '.join(errors)}".lstrip(": ")
            for field, errors in form.errors.items()
        )
    if is_fragment(request):
        capacity_request.refresh_from_db()
        if outcome is None and capacity_request.status == CapacityRequest.Status.SUBMITTED:
            row = _review_rows(request.user, [capacity_request])[0]
            row["form"] = form
            row["error"] = error
            return render_page(
                request, "tenants/review_queue.html", {"row": row, "can_decide": True}, fragment="review-row"
            )
        # Decided now, or already decided by someone else: the row leaves the queue, the outcome goes to
        # the log above it (out of band), and the list reloads so every other row's free capacity is current.
        response = render(request, "tenants/review_queue_decided.html", {"capacity_request": capacity_request})
        response["HX-Trigger"] = "capacity-decided"
        return varies_on_htmx(response)
    if error:
        messages.error(request, error)
    else:
        messages.success(request, _("Request %(id)s decided.") % {"id": capacity_request.number})
    return redirect("review-queue")


decide.tenant_model = CapacityRequest


@login_required
def pool_timeline(request, pk: int):
    require_program_staff(request.user)
    pool = get_object_or_404(CapacityPool.objects.select_related("instance_type", "program"), pk=pk)
    ranked, others = largest_holders(pool, limit=MAX_SERIES)
    top = pool_spans([pool.pk], starts_on=pool.starts_on, ends_on=pool.ends_on, organizations=ranked)[pool.pk]
    total_by_day = allocated_by_day([pool.pk], first=pool.starts_on, last=pool.ends_on)[pool.pk]
    names = dict(visible_organizations(request.user).filter(pk__in=ranked).values_list("pk", "name"))
    pools = (
        CapacityPool.objects.filter(program=pool.program)
        .select_related("instance_type")
        .order_by("instance_type__api_name", "region")
    )
    running = usage().pool_running(pool, first=pool.starts_on, last=min(pool.ends_on, today()))
    chart = pool_chart(pool, top, total_by_day, names, ranked=ranked, others=others, today=today(), running=running)
    return render(request, "tenants/pool_timeline.html", {"pool": pool, "pools": pools, "chart": chart})


@login_required
def allocations(request):
    """Program staff: every allocation, filterable, with revoke for managers. The organization filter is a search
    field (one query for the organization it names, suggestions from `organization-suggestions`), and the page
    counts only a few pages ahead (BoundedPaginator): its queries and rows do not grow with the table."""
    require_program_staff(request.user)
    rows = Allocation.objects.visible_to(request.user).select_related("organization", "pool__instance_type")
    # What the page draws of each allocation and nothing more (the request row, the org's contact, the pool's
    # reservation are never shown).
    rows = rows.only(
        *ALLOCATION_ROW_FIELDS,
        "organization__name",
        "organization__slug",
        "pool__region",
        "pool__instance_type__api_name",
        "pool__instance_type__accelerators_per_instance",
    )
    status = choice_param(request, "status", Allocation.Status.values)
    org = organization_filter(request)
    if status:
        rows = rows.filter(status=status)
    if org.organization:
        rows = rows.filter(organization_id=org.organization["pk"])
    valid = status.valid and org.valid
    if not valid:
        rows = rows.none()
    # Newest first; the columns sort (?sort=) by the allocation's own indexed fields (tests/tenants/test_indexes.py).
    table = sort_table(request, AllocationTable(rows, order_by="-window"), per_page=PAGE_SIZE, bounded=True)
    page = table.page
    context = {
        "page": page,
        "table": table,
        "rows": allocation_rows(page.object_list, on=today()),
        "statuses": Allocation.Status.choices,
        "status": status,
        "org_filter": org,
        "filtered": bool(status or org.given),
        "can_revoke": is_program_manager(request.user),
    }
    # A full page refusing a filter answers 400; an htmx fragment answers 200 so htmx swaps the message in.
    return render_page(
        request,
        "tenants/allocations.html",
        context,
        fragment="allocation-rows",
        status=200 if valid or is_fragment(request) else 400,
    )


@login_required
def revoke(request, pk: int):
    """A program manager revokes an allocation with a reason, after reading which clusters it deletes."""
    allocations = Allocation.objects.visible_to(request.user).select_related("organization", "pool__instance_type")
    allocation = get_object_or_404(allocations, pk=pk)
    require_program_manager(request.user, _("Only a program manager can revoke an allocation."))
    form = RevokeForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            revoke_allocation(user=request.user, allocation=allocation, reason=form.cleaned_data["reason"])
        except ValidationError as error:
            apply_errors(form, error)
        else:
            messages.success(request, _("Allocation %(id)s revoked.") % {"id": allocation.number})
            return redirect("allocations")
    revocable = allocation.status not in (Allocation.Status.REVOKED, Allocation.Status.EXPIRED)
    context = {
        "allocation": allocation,
        "form": form,
        "revocable": revocable,
        "clusters": clusters_to_delete(allocation) if revocable else [],
    }
    return render_form(request, "tenants/allocation_revoke.html", context, invalid=bool(form.errors))


revoke.tenant_model = Allocation
