"""Pages for workload records, support cases and the weekly review (htmx partials via {% partialdef %}).

Every page enters tenant data through tenants.access or `Model.objects.visible_to(user)`: another
organization's workload or case is a 404. Views parse input, call one service and render.
"""

from __future__ import annotations

import csv
from datetime import timedelta

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.db.models import Prefetch, QuerySet
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from tenants.access import get_org_access_or_404, is_program_staff, visible_organizations
from tenants.models import Allocation
from workloads import services
from workloads.filters import SupportCaseFilter, WorkloadFilter
from workloads.forms import (
    ActionItemForm,
    CaseForm,
    CaseUpdateForm,
    CommentForm,
    ReviewMeetingForm,
    WorkloadForm,
    apply_errors,
)
from workloads.models import ActionItem, SupportCase, Workload
from workloads.review import build_week, iso_week, parse_iso_week

PAGE_SIZE = 50

# ?sort= keys of the tracking table and what they order by (a leading "-" reverses).
WORKLOAD_SORTS = {
    "org": ("organization__name", "name"),
    "name": ("name", "organization__name"),
    "phase": ("phase", "organization__name", "name"),
    "params": ("parameter_count", "organization__name", "name"),
    "tokens": ("target_tokens", "organization__name", "name"),
    "framework": ("framework", "organization__name", "name"),
    "cluster": ("cluster_type", "organization__name", "name"),
    "storage": ("storage", "organization__name", "name"),
    "instances": ("allocation__instance_count", "organization__name", "name"),
    "status": ("status", "organization__name", "name"),
    "updated": ("updated_at", "pk"),
}
CASE_SORTS = {
    "opened": ("created_at", "pk"),
    "updated": ("updated_at", "pk"),
    "severity": ("severity", "-created_at"),
    "status": ("status", "-created_at"),
    "org": ("organization__name", "-created_at"),
}


def _sorted(queryset: QuerySet, sorts: dict, key: str, default: str) -> tuple[QuerySet, str]:
    name = key.removeprefix("-")
    if name not in sorts:
        key, name = default, default.removeprefix("-")
    fields = sorts[name]
    if key.startswith("-"):
        fields = tuple(f.removeprefix("-") if f.startswith("-") else f"-{f}" for f in fields)
    return queryset.order_by(*fields), key


def _fragment(request) -> bool:
    """An htmx request wants a fragment, except when htmx restores a pushed URL missing from its history
    cache (back button): then it needs the whole page."""
    return bool(request.htmx) and not request.htmx.history_restore_request


def _page(request, queryset: QuerySet):
    return Paginator(queryset, PAGE_SIZE).get_page(request.GET.get("page"))


def _render_form(request, template: str, context: dict, partial: str | None = None, *, invalid: bool):
    """Full pages with form errors answer 400; an htmx fragment answers 200 so htmx swaps the errors in."""
    if _fragment(request) and partial:
        return render(request, f"{template}#{partial}", context)
    return render(request, template, context, status=400 if invalid else 200)


# --- Workloads -----------------------------------------------------------------------------------


def _tracked_workloads(request) -> tuple[WorkloadFilter, QuerySet[Workload]]:
    workloads = Workload.objects.visible_to(request.user).select_related(
        "organization", "allocation__pool__instance_type"
    )
    filterset = WorkloadFilter(request.GET, queryset=workloads, request=request)
    # A filter that does not parse shows nothing rather than quietly showing everything.
    return filterset, filterset.qs if filterset.is_valid() else workloads.none()


def _writable_orgs(request) -> list:
    # Tenants record workloads for the orgs they belong to; staff read only.
    if is_program_staff(request.user):
        return []
    return list(visible_organizations(request.user).order_by("name"))


@login_required
@require_GET
@vary_on_headers("HX-Request")
def workload_tracking(request):
    """The program tracking view: every org's workloads side by side (a tenant: its own), filtered and sorted."""
    filterset, workloads = _tracked_workloads(request)
    workloads, sort = _sorted(workloads, WORKLOAD_SORTS, request.GET.get("sort", ""), "org")
    context = {
        "filterset": filterset,
        "page": _page(request, workloads),
        "sort": sort,
        "is_staff": is_program_staff(request.user),
        "writable_orgs": _writable_orgs(request),
        "filtered": any(request.GET.get(name) for name in filterset.filters),
    }
    template = "workloads/workload_tracking.html"
    if _fragment(request):
        return render(request, f"{template}#workload-table", context)
    return render(request, template, context, status=400 if filterset.errors else 200)


def _csv_cell(value) -> str:
    text = "" if value is None else str(value)
    # Spreadsheets run cells starting with these as formulas: keep a tenant's text inert.
    return f"'{text}" if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


@login_required
@require_GET
def workload_export(request):
    """The tracking table as CSV, with the same filters and sort as the page, all rows."""
    filterset, workloads = _tracked_workloads(request)
    if filterset.errors:
        return HttpResponse(filterset.errors.as_text(), status=400, content_type="text/plain; charset=utf-8")
    workloads, _sort = _sorted(workloads, WORKLOAD_SORTS, request.GET.get("sort", ""), "org")
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    stamp = timezone.localtime().strftime("%Y%m%d-%H%M")
    response["Content-Disposition"] = f'attachment; filename="workloads-{stamp}.csv"'
    writer = csv.writer(response)
    writer.writerow(
        [
            "organization",
            "workload",
            "phase",
            "status",
            "model_name",
            "architecture",
            "parameters",
            "active_parameters",
            "target_tokens",
            "framework",
            "tensor_parallel",
            "pipeline_parallel",
            "data_parallel",
            "expert_parallel",
            "cluster_type",
            "storage",
            "allocation_id",
            "instances",
            "instance_type",
            "region",
            "updated_at",
            "notes",
        ]
    )
    for w in workloads.iterator(chunk_size=500):
        allocation = w.allocation
        writer.writerow(
            _csv_cell(value)
            for value in (
                w.organization.slug,
                w.name,
                w.get_phase_display(),
                w.get_status_display(),
                w.model_name,
                w.get_architecture_display(),
                w.parameter_count,
                w.active_parameter_count,
                w.target_tokens,
                w.get_framework_display(),
                w.tensor_parallel,
                w.pipeline_parallel,
                w.data_parallel,
                w.expert_parallel,
                w.get_cluster_type_display(),
                w.get_storage_display(),
                allocation.pk if allocation else None,
                allocation.instance_count if allocation else None,
                allocation.pool.instance_type.api_name if allocation else None,
                allocation.pool.region if allocation else None,
                timezone.localtime(w.updated_at).isoformat(timespec="minutes"),
                w.notes,
            )
        )
    return response


@login_required
@require_GET
def workload_print(request):
    """The workload tracking document: one printed page per organization, same filters as the table."""
    filterset, workloads = _tracked_workloads(request)
    workloads = workloads.order_by("organization__name", "name", "pk")
    organizations = visible_organizations(request.user).select_related("lead_engineer").order_by("name")
    if filterset.is_valid():
        chosen = filterset.form.cleaned_data
        if chosen.get("organization"):
            organizations = organizations.filter(pk=chosen["organization"].pk)
        if any(value for name, value in chosen.items() if name != "organization"):
            # A search prints the organizations it found something in, not a blank page for every other one.
            organizations = organizations.filter(pk__in=workloads.values("organization"))
    allocations = (
        Allocation.objects.visible_to(request.user)
        .exclude(status__in=[Allocation.Status.REVOKED, Allocation.Status.EXPIRED])
        .select_related("pool__instance_type")
        .order_by("starts_on", "pk")
    )
    organizations = organizations.prefetch_related(
        Prefetch("workloads", queryset=workloads, to_attr="tracked_workloads"),
        Prefetch("allocations", queryset=allocations, to_attr="current_allocations"),
    )
    return render(
        request,
        "workloads/workload_print.html",
        {"organizations": organizations, "filterset": filterset, "generated_at": timezone.now()},
        status=400 if filterset.errors else 200,
    )


def _require_workload_writer(request, org_slug: str):
    access = get_org_access_or_404(request.user, org_slug)
    if not services.can_write_workloads(access):
        raise PermissionDenied(_("Workload records are kept by the organization's members; program staff read them."))
    return access


@login_required
def workload_create(request, org_slug: str):
    access = _require_workload_writer(request, org_slug)
    org = access.organization
    form = WorkloadForm(request.POST or None, organization=org)
    if request.method == "POST" and form.is_valid():
        try:
            workload = services.create_workload(user=request.user, organization=org, data=form.changes)
        except ValidationError as error:
            apply_errors(form, error)
        else:
            return redirect("workloads:workload-detail", pk=workload.pk)
    context = {"form": form, "org": org, "workload": None}
    return _render_form(request, "workloads/workload_form.html", context, invalid=bool(form.errors))


def _visible_workload(request, pk: int) -> Workload:
    workloads = Workload.objects.visible_to(request.user).select_related(
        "organization", "created_by", "allocation__pool__instance_type"
    )
    return get_object_or_404(workloads, pk=pk)


@login_required
@require_GET
def workload_detail(request, pk: int):
    workload = _visible_workload(request, pk)
    access = get_org_access_or_404(request.user, workload.organization.slug)
    history = _page(request, workload.changes.select_related("actor").order_by("-changed_at", "-pk"))
    cases = SupportCase.objects.visible_to(request.user).filter(workload=workload).select_related("assignee")
    return render(
        request,
        "workloads/workload_detail.html",
        {
            "workload": workload,
            "org": workload.organization,
            "page": history,
            "cases": cases.order_by("-created_at")[:20],
            "can_write": services.can_write_workloads(access),
            "can_open_case": access.can_write,
        },
    )


workload_detail.tenant_model = Workload


@login_required
def workload_edit(request, pk: int):
    workload = _visible_workload(request, pk)
    _require_workload_writer(request, workload.organization.slug)
    form = WorkloadForm(request.POST or None, organization=workload.organization, workload=workload)
    if request.method == "POST" and form.is_valid():
        try:
            services.update_workload(
                user=request.user, workload=workload, data={name: form.changes[name] for name in form.changed_data}
            )
        except ValidationError as error:
            apply_errors(form, error)
        else:
            return redirect("workloads:workload-detail", pk=workload.pk)
    context = {"form": form, "org": workload.organization, "workload": workload}
    return _render_form(request, "workloads/workload_form.html", context, invalid=bool(form.errors))


workload_edit.tenant_model = Workload


# --- Support cases -------------------------------------------------------------------------------


@login_required
@require_GET
@vary_on_headers("HX-Request")
def case_list(request):
    """Support cases: a tenant's own, or every org's for program staff. Active cases first by default."""
    data = request.GET.copy()
    if "state" not in data:
        data["state"] = "active"
    cases = SupportCase.objects.visible_to(request.user).select_related("organization", "assignee", "workload")
    filterset = SupportCaseFilter(data, queryset=cases, request=request)
    cases = filterset.qs if filterset.is_valid() else cases.none()
    cases, sort = _sorted(cases, CASE_SORTS, request.GET.get("sort", ""), "-updated")
    staff = is_program_staff(request.user)
    context = {
        "filterset": filterset,
        "page": _page(request, cases),
        "sort": sort,
        "is_staff": staff,
        "case_orgs": visible_organizations(request.user).order_by("name"),
        "now": timezone.now(),
    }
    template = "workloads/case_list.html"
    if _fragment(request):
        return render(request, f"{template}#case-table", context)
    return render(request, template, context, status=400 if filterset.errors else 200)


@login_required
def case_create(request, org_slug: str):
    access = get_org_access_or_404(request.user, org_slug)
    if not access.can_write:
        raise PermissionDenied(_("You cannot open cases for this organization."))
    org = access.organization
    initial = {}
    if workload_id := request.GET.get("workload", ""):
        initial["workload"] = workload_id if workload_id.isdigit() else None
    form = CaseForm(request.POST or None, organization=org, initial=initial)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            case = services.open_case(
                user=request.user,
                organization=org,
                title=data["title"],
                description=data["description"],
                category=data["category"],
                severity=data["severity"],
                workload=data["workload"],
            )
        except ValidationError as error:
            apply_errors(form, error)
        else:
            return redirect("workloads:case-detail", pk=case.pk)
    context = {"form": form, "org": org}
    return _render_form(request, "workloads/case_form.html", context, invalid=bool(form.errors))


def _visible_case(request, pk: int) -> SupportCase:
    cases = SupportCase.objects.visible_to(request.user).select_related(
        "organization__lead_engineer", "assignee", "opened_by", "workload"
    )
    return get_object_or_404(cases, pk=pk)


def _case_context(request, case: SupportCase, *, comment_form=None, update_form=None) -> dict:
    staff = is_program_staff(request.user)
    events = case.events.select_related("actor").order_by("created_at", "pk")
    if not staff:
        events = events.public()  # the one place pages decide: tenants never see internal entries
    return {
        "case": case,
        "org": case.organization,
        "events": events,
        "is_staff": staff,
        "comment_form": comment_form or CommentForm(staff=staff),
        "update_form": update_form or CaseUpdateForm(case=case, staff=staff),
        "now": timezone.now(),
    }


@login_required
@require_GET
@vary_on_headers("HX-Request")
def case_detail(request, pk: int):
    case = _visible_case(request, pk)
    template = "workloads/case_detail.html"
    if _fragment(request):
        # The history polls for itself alone; the other htmx requests swap the whole case.
        template += "#case-history" if request.GET.get("part") == "history" else "#case-body"
    return render(request, template, _case_context(request, case))


case_detail.tenant_model = SupportCase


@login_required
@require_POST
def case_comment(request, pk: int):
    case = _visible_case(request, pk)
    staff = is_program_staff(request.user)
    form = CommentForm(request.POST, staff=staff)
    if form.is_valid():
        try:
            services.add_comment(
                user=request.user, case=case, body=form.cleaned_data["body"], internal=form.cleaned_data["internal"]
            )
        except ValidationError as error:
            apply_errors(form, error)
        else:
            if _fragment(request):
                return render(
                    request, "workloads/case_detail.html#case-body", _case_context(request, _visible_case(request, pk))
                )
            return redirect("workloads:case-detail", pk=case.pk)
    context = _case_context(request, case, comment_form=form)
    return _render_form(request, "workloads/case_detail.html", context, "case-body", invalid=True)


case_comment.tenant_model = SupportCase


@login_required
@require_POST
def case_update(request, pk: int):
    case = _visible_case(request, pk)
    staff = is_program_staff(request.user)
    form = CaseUpdateForm(request.POST, case=case, staff=staff)
    if form.is_valid():
        try:
            services.update_case(user=request.user, case=case, comment=form.cleaned_data["comment"], **form.changes)
        except ValidationError as error:
            apply_errors(form, error)
        else:
            if _fragment(request):
                return render(
                    request, "workloads/case_detail.html#case-body", _case_context(request, _visible_case(request, pk))
                )
            return redirect("workloads:case-detail", pk=case.pk)
    context = _case_context(request, case, update_form=form)
    return _render_form(request, "workloads/case_detail.html", context, "case-body", invalid=True)


case_update.tenant_model = SupportCase


# --- Weekly review -------------------------------------------------------------------------------


def _require_staff(request) -> None:
    if not is_program_staff(request.user):
        raise PermissionDenied(_("The weekly review is for program staff."))


def _week(week: str):
    try:
        week_start = parse_iso_week(week)
    except ValueError:
        raise Http404(_("No such week.")) from None
    if week_start > services.this_week():
        raise Http404(_("That week has not started yet."))
    return week_start


@login_required
@require_GET
def review_current(request):
    _require_staff(request)
    return redirect("workloads:review-week", week=iso_week(services.this_week()))


def _review_context(request, week_start, *, meeting_form=None, item_form=None) -> dict:
    organizations = visible_organizations(request.user)
    review = build_week(week_start=week_start, organizations=organizations)
    meeting = review.meeting
    if meeting_form is None:
        initial = {}
        if meeting is not None:
            initial = {
                "attendees": [a.pk for a in meeting.attendees.all()],
                "other_attendees": meeting.other_attendees,
                "minutes": meeting.minutes,
            }
        meeting_form = ReviewMeetingForm(initial=initial)
    cases = SupportCase.objects.visible_to(request.user)
    return {
        "review": review,
        "meeting_form": meeting_form,
        "item_form": item_form or ActionItemForm(organizations=organizations.order_by("name"), cases=cases),
        "previous_week": iso_week(week_start - timedelta(days=7)),
        "next_week": iso_week(week_start + timedelta(days=7)) if week_start < services.this_week() else None,
        "this_week": iso_week(services.this_week()),
    }


@login_required
@require_GET
@vary_on_headers("HX-Request")
def review_week(request, week: str):
    """The weekly review (staff): per org, open and stale cases, cases opened and resolved, workloads
    changed; the meeting record with its action items, and earlier weeks' open items carried forward."""
    _require_staff(request)
    week_start = _week(week)
    template = "workloads/review_week.html" + ("#meeting" if _fragment(request) else "")
    return render(request, template, _review_context(request, week_start))


@login_required
@require_POST
def review_meeting_save(request, week: str):
    _require_staff(request)
    week_start = _week(week)
    form = ReviewMeetingForm(request.POST)
    if form.is_valid():
        try:
            services.save_review_meeting(user=request.user, week_start=week_start, **form.cleaned_data)
        except ValidationError as error:
            apply_errors(form, error)
        else:
            return _after_review_post(request, week_start)
    context = _review_context(request, week_start, meeting_form=form)
    return _render_form(request, "workloads/review_week.html", context, "meeting", invalid=True)


ITEM_ERROR_ALIASES = {"title": "case_title", "category": "case_category", "severity": "case_severity"}


@login_required
@require_POST
def review_action_item_add(request, week: str):
    _require_staff(request)
    week_start = _week(week)
    organizations = visible_organizations(request.user).order_by("name")
    form = ActionItemForm(request.POST, organizations=organizations, cases=SupportCase.objects.visible_to(request.user))
    if form.is_valid():
        data = form.cleaned_data
        try:
            services.add_action_item(
                user=request.user,
                week_start=week_start,
                text=data["text"],
                organization=data["organization"],
                owner=data["owner"],
                due_on=data["due_on"],
                case=data["case"],
                new_case=form.new_case,
            )
        except ValidationError as error:
            apply_errors(form, error, ITEM_ERROR_ALIASES)
        else:
            return _after_review_post(request, week_start)
    context = _review_context(request, week_start, item_form=form)
    return _render_form(request, "workloads/review_week.html", context, "meeting", invalid=True)


@login_required
@require_POST
def review_action_item_status(request, pk: int):
    _require_staff(request)
    item = get_object_or_404(ActionItem.objects.visible_to(request.user).select_related("meeting"), pk=pk)
    services.set_action_item_done(user=request.user, item=item, done=request.POST.get("done") == "1")
    week = request.POST.get("week", "")
    try:
        week_start = _week(week)
    except Http404:
        week_start = item.meeting.week_start
    return _after_review_post(request, week_start)


def _after_review_post(request, week_start):
    if _fragment(request):
        return render(request, "workloads/review_week.html#meeting", _review_context(request, week_start))
    return redirect(reverse("workloads:review-week", kwargs={"week": iso_week(week_start)}))
