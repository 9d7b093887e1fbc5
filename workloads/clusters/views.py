"""Cluster pages: list, detail with live status (htmx polling while in flight), create, delete, retry.

Clusters are reached through `Cluster.objects.visible_to(user)` (staff see every org's, a tenant its
own; another tenant's cluster is a 404). Views parse input, call one service, render.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import Case, When
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST, require_safe

from portal.forms import apply_errors
from portal.pages import id_param, paginate, render_page
from tenants.access import (
    OrgAccess,
    acting_organizations,
    get_org_access_or_404,
    is_program_staff,
)
from workloads.clusters.allowance import active_allocations, allowances
from workloads.clusters.forms import KIND_FOR_WORKLOAD, ClusterForm
from workloads.clusters.models import Cluster, ClusterEvent, ClusterInstanceGroup, ClusterNode
from workloads.clusters.reconcile import stalled_attempt
from workloads.clusters.services import GroupRequest, create_cluster, request_delete, retry_cluster
from workloads.health.models import HealthEvent
from workloads.jobs.views import recent_jobs
from workloads.records.models import Workload
from workloads.support.models import SupportCase
from workloads.validation.views import latest_run

PAGE_SIZE = 50
NODE_PAGE_SIZE = 64
GONE_PAGE_SIZE = 20
TIMELINE_SIZE = 50
CASES_SHOWN = 10
STEPS = [Cluster.Status.REQUESTED, Cluster.Status.PROVISIONING, Cluster.Status.IN_SERVICE]


WATCH_ONLY = _("Support engineers can watch clusters but not create or delete them.")


def _visible_cluster(request, pk: int) -> Cluster:
    clusters = Cluster.objects.visible_to(request.user).select_related(
        "organization", "allocation__pool__instance_type", "workload", "created_by"
    )
    return get_object_or_404(clusters, pk=pk)


def operator_access(user, organization) -> OrgAccess:
    """The caller's access to the org, if it may create and delete clusters there (403 otherwise)."""
    access = get_org_access_or_404(user, organization.slug)
    access.require(access.can_operate_clusters, WATCH_ONLY)
    return access


@login_required
@require_safe
def cluster_list(request):
    clusters = (
        Cluster.objects.visible_to(request.user)
        .select_related("organization", "allocation__pool__instance_type")
        .prefetch_related("groups")  # scoped by the clusters they belong to
        .order_by("-created_at", "-pk")
    )
    if request.GET.get("show") != "all":
        clusters = clusters.exclude(status=Cluster.Status.DELETED)
    page = paginate(request, clusters, PAGE_SIZE)
    staff = is_program_staff(request.user)
    # Tenants create clusters from here; staff open an org's cluster form from its allocations.
    create_orgs = [] if staff else list(acting_organizations(request.user).order_by("name"))
    context = {
        "page": page,
        "clusters": page.object_list,
        "any_in_flight": any(c.is_in_flight for c in page.object_list),
        "is_staff": staff,
        "create_orgs": create_orgs,
        "show_all": request.GET.get("show") == "all",
    }
    return render_page(request, "workloads/clusters/cluster_list.html", context, fragment="cluster-rows")


@login_required
@require_safe
def cluster_detail(request, pk: int):
    cluster = _visible_cluster(request, pk)
    access = get_org_access_or_404(request.user, cluster.organization.slug)
    org = cluster.organization
    nodes, gone_nodes = _node_pages(request, org, cluster)
    events = list(
        ClusterEvent.objects.for_org(org)
        .filter(cluster=cluster)
        .select_related("actor")
        .order_by("-created_at", "-pk")[:TIMELINE_SIZE]
    )
    health = list(
        HealthEvent.objects.for_org(org).filter(cluster=cluster).order_by("resolved_at", "-observed_at")[:TIMELINE_SIZE]
    )
    groups = list(ClusterInstanceGroup.objects.for_org(org).filter(cluster=cluster).order_by("role", "name"))
    cases = SupportCase.objects.for_org(org).filter(cluster=cluster).order_by("-created_at", "-pk")
    context = {
        "jobs": recent_jobs(cluster),
        "latest_run": latest_run(cluster),
        "cases": list(cases[:CASES_SHOWN]),
        "cluster": cluster,
        "access": access,
        "can_operate": access.can_operate_clusters,
        "groups": groups,
        "nodes": nodes,
        "gone_nodes": gone_nodes,
        "gone_open": "gone_page" in request.GET,
        "events": events,
        "health": health,
        "open_health": [h for h in health if h.resolved_at is None],
        "steps": [(step, Cluster.Status(step).label) for step in STEPS],
        "stalled": stalled_attempt(cluster),
        "step_index": STEPS.index(cluster.status) if cluster.status in STEPS else None,
    }
    return render_page(request, "workloads/clusters/cluster_detail.html", context, fragment="cluster-live")


cluster_detail.tenant_model = Cluster


def _node_pages(request, org, cluster):
    """The cluster's current nodes, unhealthy ones first, and apart from them the nodes that have left it, the
    latest first: each list paged on its own, so a cluster that replaced many nodes keeps a short page."""
    rows = ClusterNode.objects.for_org(org).filter(cluster=cluster)
    unhealthy_first = Case(When(status__in=ClusterNode.UNHEALTHY, then=0), default=1)
    current = rows.filter(gone_at__isnull=True).order_by(unhealthy_first, "group_name", "instance_id")
    gone = rows.filter(gone_at__isnull=False).order_by("-gone_at", "instance_id")
    return (
        paginate(request, current, NODE_PAGE_SIZE, param="nodes_page"),
        paginate(request, gone, GONE_PAGE_SIZE, param="gone_page"),
    )


@login_required
def cluster_create(request, org_slug: str):
    access = get_org_access_or_404(request.user, org_slug)
    access.require(access.can_operate_clusters, WATCH_ONLY)
    org = access.organization
    allocations = active_allocations(org).select_related("pool__instance_type").order_by("pk")
    workloads = Workload.objects.for_org(org).order_by("name")
    headroom = allowances(org, allocations)
    form = ClusterForm(
        request.POST or None,
        allocations=allocations,
        workloads=workloads,
        initial=_initial(request, allocations, workloads, headroom),
    )
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        allocation = data["allocation"]
        try:
            cluster = create_cluster(
                organization=org,
                allocation=allocation,
                workload=data["workload"],
                name=data["name"],
                kind=data["kind"],
                groups=[GroupRequest(allocation.pool.instance_type.api_name, data["instance_count"])],
                storage=data["storage"],
                fsx_file_system_id=data["fsx_file_system_id"],
                s3_data_repository_path=data["s3_data_repository_path"],
                storage_capacity_gib=data["storage_capacity_gib"],
                threads_per_core=data["threads_per_core"],
                actor=request.user,
            )
        except ValidationError as error:
            apply_errors(form, error)
        else:
            messages.success(
                request,
                _("Cluster %(name)s requested: it is being provisioned.") % {"name": cluster.name},
                extra_tags="while-in-flight",  # hidden once the cluster's page shows it settled (base.html, CSS)
            )
            return redirect("clusters:detail", pk=cluster.pk)
    has_settings = hasattr(org, "cloud_settings")
    return render(
        request,
        "workloads/clusters/cluster_form.html",
        {"org": org, "form": form, "has_settings": has_settings, "allocations": allocations, "headroom": headroom},
        status=400 if form.errors else 200,
    )


def _initial(request, allocations, workloads, headroom) -> dict:
    """Pre-fill from ?allocation= and ?workload=: the instances the org's clusters may still take of the
    allocation's type (at least one, so the form shows the limit if there are none), the workload's kind."""
    initial: dict = {"storage": Cluster.Storage.NONE}
    allocation = None
    if (allocation_id := id_param(request.GET.get("allocation"))) is not None:
        allocation = allocations.filter(pk=allocation_id).first()
    if allocation is None:
        allocation = allocations.first()
    if allocation is not None:
        initial["allocation"] = allocation.pk
        instance_type, region = allocation.pool.instance_type.api_name, allocation.pool.region
        free = sum(h.free for h in headroom if (h.instance_type, h.region) == (instance_type, region))
        initial["instance_count"] = max(free, 1)
        initial["name"] = f"{instance_type.split('.')[0]}-training"
    if (workload_id := id_param(request.GET.get("workload"))) is not None and (
        workload := workloads.filter(pk=workload_id).first()
    ):
        initial["workload"] = workload.pk
        initial["kind"] = KIND_FOR_WORKLOAD.get(workload.cluster_type, Cluster.Kind.HYPERPOD_SLURM)
        if workload.storage == Workload.Storage.FSX_LUSTRE_S3:
            initial["storage"] = Cluster.Storage.FSX_LUSTRE_NEW
    return initial


@login_required
def cluster_delete(request, pk: int):
    cluster = _visible_cluster(request, pk)
    operator_access(request.user, cluster.organization)
    if request.method == "POST":
        try:
            request_delete(cluster=cluster, actor=request.user)
        except ValidationError as error:
            messages.error(request, " ".join(error.messages))
            return render(
                request, "workloads/clusters/cluster_delete.html", {"cluster": cluster, "error": error}, status=400
            )
        messages.success(request, _("Cluster %(name)s is being deleted.") % {"name": cluster.name})
        return redirect("clusters:detail", pk=cluster.pk)
    if not cluster.can_delete:
        messages.error(request, _("This cluster cannot be deleted now."))
        return redirect("clusters:detail", pk=cluster.pk)
    instances = sum(
        g.instance_count for g in ClusterInstanceGroup.objects.for_org(cluster.organization).filter(cluster=cluster)
    )
    return render(request, "workloads/clusters/cluster_delete.html", {"cluster": cluster, "instances": instances})


cluster_delete.tenant_model = Cluster


@login_required
@require_POST
def cluster_retry(request, pk: int):
    cluster = _visible_cluster(request, pk)
    operator_access(request.user, cluster.organization)
    try:
        retry_cluster(cluster=cluster, actor=request.user)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, _("Provisioning %(name)s again.") % {"name": cluster.name})
    return redirect("clusters:detail", pk=cluster.pk)


cluster_retry.tenant_model = Cluster
