"""Workload record pages: the program tracking view (filter, sort, CSV, the printed tracking document), one
workload's page with its history, and the record form. Every page enters tenant data through tenants.access
or `Workload.objects.visible_to(user)`: another organization's workload is a 404.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import Prefetch, QuerySet
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET

from portal.exports import csv_response
from portal.forms import apply_errors
from portal.pages import id_param, paginate, render_form, render_page, sort_by
from tenants.access import acting_organizations, get_org_access_or_404, is_program_staff, visible_organizations
from tenants.models import Allocation
from workloads.clusters.models import Cluster, cluster_instances
from workloads.jobs.models import Job
from workloads.records.filters import WorkloadFilter
from workloads.records.fit import Fit, cluster_accelerators, layout_fit, workload_estimate, workload_fit
from workloads.records.forms import WorkloadForm
from workloads.records.models import MAX_PARALLEL_DEGREE, Workload
from workloads.records.services import READ_ONLY, create_workload, update_workload
from workloads.support.models import SupportCase
from workloads.training.views import progress_context

JOBS_SHOWN = 10
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
    "instances": ("cluster_instances", "organization__name", "name"),
    "status": ("status", "organization__name", "name"),
    "updated": ("updated_at", "pk"),
}


def _tracked_workloads(request) -> tuple[WorkloadFilter, QuerySet[Workload]]:
    workloads = (
        Workload.objects.visible_to(request.user)
        .select_related("organization", "allocation__pool__instance_type")
        .annotate(cluster_instances=cluster_instances())
    )
    filterset = WorkloadFilter(request.GET, queryset=workloads, request=request)
    # A filter that does not parse shows nothing rather than quietly showing everything.
    return filterset, filterset.qs if filterset.is_valid() else workloads.none()


def _writable_orgs(request) -> list:
    # Tenants record workloads for the orgs they belong to; staff read only.
    if is_program_staff(request.user):
        return []
    return list(acting_organizations(request.user).order_by("name"))


@login_required
@require_GET
def workload_tracking(request):
    """The program tracking view: every org's workloads side by side (a tenant: its own), filtered and sorted."""
    filterset, workloads = _tracked_workloads(request)
    workloads, sort = sort_by(workloads, WORKLOAD_SORTS, request.GET.get("sort", ""), "org")
    context = {
        "filterset": filterset,
        "page": paginate(request, workloads, PAGE_SIZE),
        "sort": sort,
        "is_staff": is_program_staff(request.user),
        # A tenant of one organization needs no column repeating its name.
        "show_org": visible_organizations(request.user)[:2].count() > 1,
        "writable_orgs": _writable_orgs(request),
        "filtered": any(request.GET.get(name) for name in filterset.filters),
    }
    return render_page(
        request,
        "workloads/records/workload_tracking.html",
        context,
        fragment="workload-table",
        status=400 if filterset.errors else 200,
    )


@login_required
@require_GET
def workload_export(request):
    """The tracking table as CSV, with the same filters and sort as the page, all rows."""
    filterset, workloads = _tracked_workloads(request)
    if filterset.errors:
        return HttpResponse(filterset.errors.as_text(), status=400, content_type="text/plain; charset=utf-8")
    workloads, _sort = sort_by(workloads, WORKLOAD_SORTS, request.GET.get("sort", ""), "org")
    response, writer = csv_response("workloads")
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
            "cluster_instances",
            "instance_type",
            "region",
            "updated_at",
            "notes",
        ]
    )
    for w in workloads.iterator(chunk_size=500):
        allocation = w.allocation
        writer.writerow(
            (
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
                w.cluster_instances,
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
        "workloads/records/workload_print.html",
        {"organizations": organizations, "filterset": filterset, "generated_at": timezone.now()},
        status=400 if filterset.errors else 200,
    )


def _require_workload_writer(request, org_slug: str):
    access = get_org_access_or_404(request.user, org_slug)
    access.require(access.can_write_workloads, READ_ONLY)
    return access


FORM_TEMPLATE = "workloads/records/workload_form.html"


def _form_fit(request, org, workload: Workload | None) -> Fit:
    """What the layout being typed needs beside what its allocation and the workload's clusters hold: from the
    posted form, the form's fields sent by htmx (?part=fit), or the saved workload. Malformed numbers count as 1:
    the form's own errors speak for them."""
    data = request.POST if request.method == "POST" else request.GET
    if "tensor_parallel" not in data:
        return workload_fit(workload) if workload else layout_fit(tp=1, pp=1, dp=1)

    def degree(name: str) -> int:
        number = id_param(data.get(name))
        return number if number and number <= MAX_PARALLEL_DEGREE else 1

    allocation_id = id_param(data.get("allocation"))
    allocation = (
        Allocation.objects.for_org(org).select_related("pool__instance_type").filter(pk=allocation_id).first()
        if allocation_id
        else None
    )
    return layout_fit(
        tp=degree("tensor_parallel"),
        pp=degree("pipeline_parallel"),
        dp=degree("data_parallel"),
        ep=degree("expert_parallel"),
        moe=data.get("architecture") == Workload.Architecture.MOE,
        allocation=allocation,
        in_clusters=cluster_accelerators(workload),
    )


def _render_workload_form(request, form, org, workload: Workload | None):
    context = {"form": form, "org": org, "workload": workload, "fit": _form_fit(request, org, workload)}
    if request.GET.get("part") == "fit":
        return render_page(request, FORM_TEMPLATE, context, fragment="workload-fit")
    return render_form(request, FORM_TEMPLATE, context, invalid=bool(form.errors))


@login_required
def workload_create(request, org_slug: str):
    access = _require_workload_writer(request, org_slug)
    org = access.organization
    form = WorkloadForm(request.POST or None, organization=org)
    if request.method == "POST" and form.is_valid():
        try:
            workload = create_workload(user=request.user, organization=org, data=form.changes)
        except ValidationError as error:
            apply_errors(form, error)
        else:
            return redirect("records:detail", pk=workload.pk)
    return _render_workload_form(request, form, org, None)


def _visible_workload(request, pk: int) -> Workload:
    workloads = Workload.objects.visible_to(request.user).select_related(
        "organization", "created_by", "allocation__pool__instance_type", "allocation__request"
    )
    return get_object_or_404(workloads, pk=pk)


@login_required
@require_GET
def workload_detail(request, pk: int):
    workload = _visible_workload(request, pk)
    access = get_org_access_or_404(request.user, workload.organization.slug)
    history = paginate(request, workload.changes.select_related("actor").order_by("-changed_at", "-pk"), PAGE_SIZE)
    cases = SupportCase.objects.visible_to(request.user).filter(workload=workload).select_related("assignee")
    clusters = Cluster.objects.for_org(workload.organization).filter(workload=workload).order_by("-created_at")
    jobs = Job.objects.for_org(workload.organization).filter(cluster__workload=workload).select_related("cluster")
    return render(
        request,
        "workloads/records/workload_detail.html",
        {
            "workload": workload,
            "org": workload.organization,
            "page": history,
            "cases": cases.order_by("-created_at")[:20],
            "clusters": clusters[:20],
            "jobs": jobs.order_by("-submitted_at", "-pk")[:JOBS_SHOWN],
            "fit": workload_fit(workload),
            "estimate": workload_estimate(workload),
            "can_write": access.can_write_workloads,
            "can_open_case": access.can_write,
            **progress_context(workload, can_write=access.can_write_workloads),
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
            update_workload(
                user=request.user, workload=workload, data={name: form.changes[name] for name in form.changed_data}
            )
        except ValidationError as error:
            apply_errors(form, error)
        else:
            return redirect("records:detail", pk=workload.pk)
    return _render_workload_form(request, form, workload.organization, workload)


workload_edit.tenant_model = Workload
