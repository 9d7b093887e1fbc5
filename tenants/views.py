from collections import defaultdict
from datetime import date, timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.db.models import Count
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from tenants import services
from tenants.access import get_org_access_or_404, is_program_manager, is_program_staff, visible_organizations
from tenants.capacity import usage_steps
from tenants.forms import CapacityRequestForm, ChangeRequestForm, DecisionForm, RevokeForm, in_billions
from tenants.models import Allocation, AuditEvent, CapacityPool, CapacityRequest, Program, Region


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
    current = (
        Allocation.objects.for_org(org)
        .filter(status__in=[Allocation.Status.SCHEDULED, Allocation.Status.ACTIVE])
        .select_related("pool__instance_type")
        .order_by("starts_on", "pk")
    )
    context = {
        "access": access,
        "org": org,
        "members": members,
        "allocation_rows": _allocation_rows(current, on=services.today()),
    }
    return render(request, "tenants/org_home.html", context)


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


# --- Capacity ----------------------------------------------------------------------------------

PAGE_SIZE = 25
# Service field names → the form fields that show their errors.
FORM_FIELD = {"parameter_count": "parameters_b", "training_tokens": "tokens_b", "base_allocation": None}


def _show_errors(form, error: ValidationError) -> None:
    if hasattr(error, "error_dict"):
        for field, messages in error.message_dict.items():
            target = FORM_FIELD.get(field, field)
            form.add_error(target if target in form.fields else None, messages)
    else:
        form.add_error(None, error.messages)


def _allocation_rows(allocations, *, on: date) -> list[dict]:
    """Instance-hours granted, elapsed and remaining as of `on` (days are whole, in program time)."""
    rows = []
    for allocation in allocations:
        elapsed_days = min(max((on - allocation.starts_on).days, 0), allocation.days)
        if allocation.status == Allocation.Status.REVOKED and allocation.revoked_at:
            elapsed_days = min(
                elapsed_days, max((timezone.localdate(allocation.revoked_at) - allocation.starts_on).days, 0)
            )
            remaining = 0
        else:
            remaining = (allocation.days - elapsed_days) * allocation.instance_count * 24
        elapsed = elapsed_days * allocation.instance_count * 24
        rows.append(
            {
                "allocation": allocation,
                "granted": allocation.instance_hours,
                "elapsed": elapsed,
                "remaining": remaining,
                "percent_elapsed": round(100 * elapsed / allocation.instance_hours) if allocation.instance_hours else 0,
            }
        )
    return rows


@login_required
def capacity(request, org_slug: str):
    """A tenant's allocations and requests."""
    access = get_org_access_or_404(request.user, org_slug)
    org = access.organization
    allocations = Allocation.objects.for_org(org).select_related("pool__instance_type").order_by("-starts_on", "-pk")
    requests = CapacityRequest.objects.for_org(org).select_related("pool__instance_type", "allocation")
    if status := request.GET.get("status"):
        requests = requests.filter(status=status)
    page = Paginator(requests, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "access": access,
        "org": org,
        "allocation_rows": _allocation_rows(allocations, on=services.today()),
        "page": page,
        "statuses": CapacityRequest.Status.choices,
        "status": status or "",
    }
    template = "tenants/capacity.html" + ("#request-rows" if request.htmx else "")
    return render(request, template, context)


ESTIMATE_FIELDS = {
    "instance_type", "region", "instance_count", "starts_on", "ends_on", "parameters_b", "tokens_b", "expected_mfu",
}  # fmt: skip


def _estimate_context(form, *, instance_type=None, region=None) -> dict:
    """The live estimate for whatever the form holds so far; tolerant of a half-filled form."""
    data = form.cleaned_data if form.is_bound and hasattr(form, "cleaned_data") else {}
    instance_type = instance_type or data.get("instance_type")
    region = region or data.get("region")
    needed = ("instance_count", "starts_on", "ends_on")
    # Say what stands in the way: as the tenant types, this panel is the only part of the page that updates.
    # Any invalid input blocks it (an out-of-range utilization must not be estimated at the default).
    problems = [
        f"{form.fields[name].label}: {errors[0]}"
        for name, errors in form.errors.items()
        if name in form.fields and name in ESTIMATE_FIELDS
    ]
    if problems or not (form.parameter_count and instance_type and region and all(data.get(k) for k in needed)):
        return {"estimate": None, "estimate_problems": problems}
    result = services.estimate_for(
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
    return {"estimate": result, "estimate_type": instance_type, "program": Program.objects.first()}


@login_required
@require_http_methods(["GET", "POST"])
def capacity_request_new(request, org_slug: str):
    access = get_org_access_or_404(request.user, org_slug)
    org = access.organization
    services.require_member(access)
    base = None
    if allocation_id := request.GET.get("allocation") or request.POST.get("allocation"):
        if not str(allocation_id).isdigit():
            raise Http404
        base = get_object_or_404(
            Allocation.objects.for_org(org).select_related("pool__instance_type"), pk=allocation_id
        )
    initial = {"region": Region.US_EAST_1}
    if base and request.GET.get("kind") == CapacityRequest.Kind.ENLARGEMENT:
        initial |= {
            "instance_count": 1,
            "kind": CapacityRequest.Kind.ENLARGEMENT,
            "starts_on": max(base.starts_on, services.today()),
            "ends_on": base.ends_on,
        }
    elif base:
        initial |= {
            "instance_count": base.instance_count,
            "kind": CapacityRequest.Kind.EXTENSION,
            "starts_on": base.ends_on + timedelta(days=1),
            "ends_on": base.ends_on + timedelta(days=30),
        }

    def save(plan: services.Plan, submit: bool) -> CapacityRequest:
        return services.create_request(
            user=request.user, organization=org, plan=plan, base_allocation=base, submit=submit
        )

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
    services.require_member(access)
    if draft.status != CapacityRequest.Status.DRAFT:
        messages.error(
            request,
            _("Only a draft can be edited; this request is %(status)s.")
            % {"status": draft.get_status_display().lower()},
        )
        return redirect("capacity-request", org_slug=org.slug, pk=draft.pk)

    def save(plan: services.Plan, submit: bool) -> CapacityRequest:
        return services.edit_draft(user=request.user, capacity_request=draft, plan=plan, submit=submit)

    return _request_form_page(
        request,
        access,
        base=draft.base_allocation,
        initial=_draft_initial(draft),
        kind=draft.kind,
        save=save,
        draft=draft,
        estimate={
            "estimate": services.request_estimate(draft),
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
                _show_errors(form, error)
            else:
                return _saved(request, capacity_request)
        fixed = {"instance_type": base.pool.instance_type, "region": base.pool.region} if base else {}
        estimate = _estimate_context(form, **fixed)
    else:
        form = form_class(initial=initial, **extra)
    context = {"access": access, "org": access.organization, "form": form, "base": base, "draft": draft}
    return render(request, "tenants/capacity_request_form.html", context | (estimate or {}))


capacity_request_edit.tenant_model = CapacityRequest


def _plan(form, base: Allocation | None, *, default_kind: str) -> services.Plan:
    """The plan a request form holds (its sizes typed in billions, counted here in units)."""
    sizes = {"parameter_count": form.parameter_count, "training_tokens": form.training_tokens}
    return services.Plan.from_data(form.cleaned_data | sizes, base=base, default_kind=default_kind)


def _draft_initial(draft: CapacityRequest) -> dict:
    return {
        "instance_type": draft.pool.instance_type,
        "region": draft.pool.region,
        "kind": draft.kind,
        "instance_count": draft.instance_count,
        "starts_on": draft.starts_on,
        "ends_on": draft.ends_on,
        "justification": draft.justification,
        "parameters_b": in_billions(draft.parameter_count),
        "tokens_b": in_billions(draft.training_tokens),
        "framework": draft.framework,
        "expected_mfu": draft.expected_mfu,
    }


def _saved(request, capacity_request: CapacityRequest):
    if capacity_request.status == CapacityRequest.Status.SUBMITTED:
        messages.success(request, _("Request #%(id)s submitted for review.") % {"id": capacity_request.pk})
    else:
        messages.success(request, _("Draft #%(id)s saved.") % {"id": capacity_request.pk})
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
        "estimate": services.request_estimate(capacity_request),
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
    service = {"submit": services.submit_request, "withdraw": services.withdraw_request}.get(action)
    if service is None:
        raise Http404
    try:
        service(user=request.user, capacity_request=capacity_request)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        done = {"submit": _("Request #%(id)s submitted for review."), "withdraw": _("Request #%(id)s withdrawn.")}
        messages.success(request, done[action] % {"id": capacity_request.pk})
    return redirect("capacity-request", org_slug=access.organization.slug, pk=capacity_request.pk)


capacity_request_action.tenant_model = CapacityRequest


# --- Program staff: review queue, pools, allocations, audit ----------------------------------


def _require_staff(user) -> None:
    if not is_program_staff(user):
        raise PermissionDenied(_("This page is for program staff."))


def _review_rows(user, capacity_requests: list[CapacityRequest]) -> list[dict]:
    """Everything the queue shows beside each request, in a fixed number of queries for the page:
    one for the pools' allocations over the page's windows, one for the orgs' allocations, one for prices."""
    if not capacity_requests:
        return []
    pool_ids = sorted({r.pool_id for r in capacity_requests})
    spans = services.pool_spans(
        pool_ids,
        starts_on=min(r.starts_on for r in capacity_requests),
        ends_on=max(r.ends_on for r in capacity_requests),
    )
    current: dict[int, list[Allocation]] = defaultdict(list)
    for allocation in (
        Allocation.objects.visible_to(user)
        .filter(organization_id__in={r.organization_id for r in capacity_requests})
        .holding_capacity()
        .filter(ends_on__gte=services.today())
        .select_related("pool__instance_type")
    ):
        current[allocation.organization_id].append(allocation)
    prices = services.catalog_prices()
    rows = []
    for capacity_request in capacity_requests:
        pool = capacity_request.pool
        room = services.headroom(
            pool, spans[pool.pk], starts_on=capacity_request.starts_on, ends_on=capacity_request.ends_on
        )
        estimate = services.request_estimate(capacity_request, prices=prices)
        rows.append(
            {
                "request": capacity_request,
                "room": room,
                "fits": capacity_request.instance_count <= room.free,
                "org_allocations": current[capacity_request.organization_id],
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
    _require_staff(request.user)
    submitted = (
        CapacityRequest.objects.visible_to(request.user)
        .filter(status=CapacityRequest.Status.SUBMITTED)
        .select_related("organization", "pool__instance_type", "pool__program", "created_by", "base_allocation")
        .order_by("submitted_at", "pk")
    )
    page = Paginator(submitted, PAGE_SIZE).get_page(request.GET.get("page"))
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
    if not is_program_manager(request.user):
        raise PermissionDenied(_("Only a program manager can decide on capacity."))
    form = DecisionForm(request.POST, prefix=f"r{capacity_request.pk}")
    outcome, error = None, None
    if form.is_valid():
        data = form.cleaned_data
        try:
            if data["decision"] == "approve":
                outcome = services.approve_request(
                    user=request.user,
                    capacity_request=capacity_request,
                    instance_count=data.get("instance_count"),
                    starts_on=data.get("starts_on"),
                    ends_on=data.get("ends_on"),
                    comment=data.get("comment", ""),
                )
            else:
                outcome = services.reject_request(
                    user=request.user, capacity_request=capacity_request, comment=data.get("comment", "")
                )
        except ValidationError as validation_error:
            error = " ".join(validation_error.messages)
    else:
        error = " ".join(
            f"{form.fields[field].label if field in form.fields else ''}: {' '.join(errors)}".lstrip(": ")
            for field, errors in form.errors.items()
        )
    if request.htmx:
        capacity_request.refresh_from_db()
        if outcome is None and capacity_request.status == CapacityRequest.Status.SUBMITTED:
            row = _review_rows(request.user, [capacity_request])[0]
            row["form"] = form
            row["error"] = error
            return render(request, "tenants/review_queue.html#review-row", {"row": row, "can_decide": True})
        # Decided now, or already decided by someone else: the row leaves the queue, the outcome goes to
        # the log above it (out of band), and the list reloads so every other row's free capacity is current.
        response = render(request, "tenants/review_queue_decided.html", {"capacity_request": capacity_request})
        response["HX-Trigger"] = "capacity-decided"
        return response
    if error:
        messages.error(request, error)
    else:
        messages.success(request, _("Request #%(id)s decided.") % {"id": capacity_request.pk})
    return redirect("review-queue")


decide.tenant_model = CapacityRequest


CHART = {"width": 960, "height": 320, "left": 56, "right": 16, "top": 16, "bottom": 44}
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"]
MAX_SERIES = 9  # the largest orgs get a colour each; the rest share "other organizations"


def pool_chart(pool: CapacityPool, spans: list, names: dict[int, str], *, today: date) -> dict:
    """Geometry of the pool timeline: stacked allocations by org over the pool window, as SVG shapes."""
    steps = usage_steps(spans, starts_on=pool.starts_on, ends_on=pool.ends_on)
    by_org: dict = defaultdict(int)
    for step in steps:
        for org_id, count in step.by_key.items():
            by_org[org_id] += count * ((step.ends_on - step.starts_on).days + 1)
    ranked = [org_id for org_id, _ in sorted(by_org.items(), key=lambda kv: (-kv[1], names.get(kv[0], "")))]
    top = ranked[:MAX_SERIES]
    series = [{"key": org_id, "name": names.get(org_id, "?"), "color": PALETTE[i]} for i, org_id in enumerate(top)]
    if len(ranked) > MAX_SERIES:
        series.append(
            {
                "key": "other",
                "name": _("%(n)s other organizations") % {"n": len(ranked) - MAX_SERIES},
                "color": PALETTE[-1],
            }
        )
    colors = {s["key"]: s["color"] for s in series}

    plot_w = CHART["width"] - CHART["left"] - CHART["right"]
    plot_h = CHART["height"] - CHART["top"] - CHART["bottom"]
    days = (pool.ends_on - pool.starts_on).days + 1
    y_max = pool.total_instances

    def x(day: date) -> float:
        return round(CHART["left"] + plot_w * (day - pool.starts_on).days / days, 2)

    def y(count: float) -> float:
        return round(CHART["top"] + plot_h * (1 - count / y_max), 2)

    rects, peak = [], 0
    for step in steps:
        stack = 0
        counts: dict = defaultdict(int)
        for org_id, count in step.by_key.items():
            counts[org_id if org_id in colors else "other"] += count
        for key in [s["key"] for s in series]:
            if counts.get(key):
                x0, x1 = x(step.starts_on), x(step.ends_on + timedelta(days=1))
                top, bottom = y(stack + counts[key]), y(stack)
                rects.append(
                    {
                        "x": x0,
                        "y": top,
                        "w": round(x1 - x0, 2),
                        "h": round(bottom - top, 2),
                        "color": colors[key],
                        "title": f"{step.starts_on} – {step.ends_on}: {counts[key]}",
                    }
                )
                stack += counts[key]
        peak = max(peak, stack)
    # Round ticks, plus the allocatable and total lines; a round tick too close to those gives way.
    step = max(10, round(y_max / 6, -1))
    marks = [pool.allocatable_instances, pool.total_instances]
    ticks_y = sorted(
        {t for t in range(0, y_max + 1, int(step)) if all(abs(t - m) > y_max * 0.06 for m in marks)} | set(marks)
    )
    months = []
    day = pool.starts_on.replace(day=1)
    while day <= pool.ends_on:
        if day >= pool.starts_on and x(day) < CHART["left"] + plot_w - 30:  # no label cut at the right edge
            months.append({"x": x(day), "label": date_format(day, "Y-m")})
        day = (day + timedelta(days=32)).replace(day=1)
    return {
        **CHART,
        "plot_w": plot_w,
        "plot_h": plot_h,
        "x0": CHART["left"],
        "x1": CHART["left"] + plot_w,
        "y_base": y(0),
        "y_mid": round(CHART["top"] + plot_h / 2),
        "y_tick": y(0) + 4,
        "y_label": y(0) + 18,
        "y_caption": CHART["height"] - 4,
        "x_label": CHART["left"] - 6,
        "free_h": round(y(0) - y(pool.allocatable_instances), 2),
        "y_allocatable": y(pool.allocatable_instances),
        "y_total": y(pool.total_instances),
        "rects": rects,
        "series": series,
        "ticks_y": [{"y": y(t), "label": t} for t in ticks_y if t <= y_max],
        "months": months,
        "today_x": x(today) if pool.starts_on <= today <= pool.ends_on else None,
        "peak": peak,
        "free_at_peak": pool.allocatable_instances - peak,
    }


@login_required
def pool_timeline(request, pk: int):
    _require_staff(request.user)
    pool = get_object_or_404(CapacityPool.objects.select_related("instance_type", "program"), pk=pk)
    spans = services.pool_spans([pool.pk], starts_on=pool.starts_on, ends_on=pool.ends_on)[pool.pk]
    names = dict(visible_organizations(request.user).filter(pk__in={s.key for s in spans}).values_list("pk", "name"))
    today = services.today()
    pools = (
        CapacityPool.objects.filter(program=pool.program)
        .select_related("instance_type")
        .order_by("instance_type__api_name", "region")
    )
    return render(
        request,
        "tenants/pool_timeline.html",
        {"pool": pool, "pools": pools, "chart": pool_chart(pool, spans, names, today=today)},
    )


@login_required
def allocations(request):
    """Program staff: every allocation, filterable, with revoke for managers."""
    _require_staff(request.user)
    rows = Allocation.objects.visible_to(request.user).select_related("organization", "pool__instance_type", "request")
    if status := request.GET.get("status"):
        rows = rows.filter(status=status)
    if org := request.GET.get("org"):
        rows = rows.filter(organization__slug=org)
    page = Paginator(rows.order_by("-starts_on", "-pk"), PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "rows": _allocation_rows(page.object_list, on=services.today()),
        "statuses": Allocation.Status.choices,
        "status": status or "",
        "org": org or "",
        "can_revoke": is_program_manager(request.user),
    }
    template = "tenants/allocations.html" + ("#allocation-rows" if request.htmx else "")
    return render(request, template, context)


@login_required
@require_POST
def revoke(request, pk: int):
    allocation = get_object_or_404(Allocation.objects.visible_to(request.user), pk=pk)
    if not is_program_manager(request.user):
        raise PermissionDenied(_("Only a program manager can revoke an allocation."))
    form = RevokeForm(request.POST)
    try:
        if not form.is_valid():
            raise ValidationError(_("Give the reason for revoking; the tenant will read it."))
        services.revoke_allocation(user=request.user, allocation=allocation, reason=form.cleaned_data["reason"])
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, _("Allocation #%(id)s revoked.") % {"id": allocation.pk})
    return redirect("allocations")


revoke.tenant_model = Allocation


@login_required
def audit_log(request):
    _require_staff(request.user)
    events = AuditEvent.objects.visible_to(request.user).select_related("actor", "organization")
    if org := request.GET.get("org"):
        events = events.filter(organization__slug=org)
    page = Paginator(events, 50).get_page(request.GET.get("page"))
    return render(request, "tenants/audit_log.html", {"page": page, "org": org or ""})
