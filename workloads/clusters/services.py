"""Cluster actions people take, from pages and the API: create one from an active allocation, retry one that
failed, delete one (and the clusters of a revoked allocation). Each checks, writes, and enqueues the worker's
part (workloads.clusters.tasks) only when the transaction commits. The worker side is provisioning.py.
"""

from __future__ import annotations

from collections import defaultdict

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q, Sum
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, gettext_noop

from portal import queue
from portal.cloud import parallelcluster
from tenants.audit import record_audit
from tenants.capacity.revocation import DoomedCluster
from tenants.models import Allocation, Organization
from workloads.clusters import progress, reconcile, tasks
from workloads.clusters.allowance import GroupRequest, active_allocations, allowed_per_type, check_allocation
from workloads.clusters.lifecycle import record_text, transition
from workloads.clusters.models import Cluster, ClusterEvent, ClusterInstanceGroup, OrgCloudSettings
from workloads.records.models import Workload

Status = Cluster.Status

# The Slurm controller (HyperPod) or head node (ParallelCluster): not accelerator capacity, so it
# does not count against the allocation.
CONTROLLER_TYPES = {
    Cluster.Kind.HYPERPOD_SLURM: ("controller-machine", "m5.12xlarge"),
    Cluster.Kind.PARALLELCLUSTER: ("head-node", "m5.8xlarge"),
}


def cloud_name_for(*, cluster_id: int, name: str, attempt: int) -> str:
    """Deterministic per attempt: the same task run again names the same cloud cluster."""
    base = f"fmp-{cluster_id}-{name}" + (f"-r{attempt}" if attempt > 1 else "")
    return base[:60].rstrip("-")


def worker_group_name(instance_type: str) -> str:
    return "workers-" + instance_type.replace(".", "-")


# --- Create, retry, delete (called from pages and the API) ------------------------------------


PARALLELCLUSTER_MISSING = gettext_lazy(
    "ParallelCluster is not available on this portal (its optional library is not installed): choose HyperPod, "
    "or ask the program team."
)


@transaction.atomic
def create_cluster(
    *,
    organization: Organization,
    allocation: Allocation,
    name: str,
    kind: str,
    groups: list[GroupRequest],
    actor,
    workload: Workload | None = None,
    storage: str = Cluster.Storage.NONE,
    fsx_file_system_id: str = "",
    s3_data_repository_path: str = "",
    storage_capacity_gib: int = 1200,
    threads_per_core: int = 1,
) -> Cluster:
    settings_row = OrgCloudSettings.objects.for_org(organization).first()
    if settings_row is None:
        raise ValidationError(
            _(
                "Your organization's AWS account is not set up for clusters yet (lifecycle scripts, execution "
                "role, subnets): ask the program team."
            )
        )
    if workload is not None and workload.organization_id != organization.pk:
        raise ValidationError({"workload": _("This workload belongs to another organization.")})
    if not groups or any(g.count < 1 for g in groups):
        raise ValidationError({"instance_count": _("A cluster needs at least one instance.")})
    if not settings_row.subnet_ids or not settings_row.security_group_ids:
        raise ValidationError(
            _(
                "Your organization's cloud settings need at least one subnet and one security group: "
                "ask the program team."
            )
        )
    if kind == Cluster.Kind.PARALLELCLUSTER and not parallelcluster.is_installed():
        raise ValidationError({"kind": PARALLELCLUSTER_MISSING})
    if kind == Cluster.Kind.HYPERPOD_EKS and not settings_row.eks_cluster_arn:
        raise ValidationError({"kind": _("HyperPod on EKS needs your organization's EKS cluster ARN in its settings.")})
    if storage == Cluster.Storage.FSX_EXISTING and not fsx_file_system_id.startswith("fs-"):
        raise ValidationError({"fsx_file_system_id": _("Enter the id of the existing file system (fs-…).")})
    if storage != Cluster.Storage.FSX_LUSTRE_NEW:
        s3_data_repository_path = ""
    if storage != Cluster.Storage.FSX_EXISTING:
        fsx_file_system_id = ""
    region = allocation.pool.region
    if Cluster.objects.for_org(organization).live().filter(name=name).exists():
        raise ValidationError({"name": _("Your organization already has a live cluster with this name.")})
    check_allocation(organization=organization, allocation=allocation, region=region, groups=groups)

    cluster = Cluster(
        organization=organization,
        allocation=allocation,
        workload=workload,
        name=name,
        kind=kind,
        region=region,
        lifecycle_s3_uri=settings_row.lifecycle_s3_uri,
        execution_role_arn=settings_row.execution_role_arn,
        subnet_ids=list(settings_row.subnet_ids),
        security_group_ids=list(settings_row.security_group_ids),
        eks_cluster_arn=settings_row.eks_cluster_arn if kind == Cluster.Kind.HYPERPOD_EKS else "",
        ssh_key_name=settings_row.ssh_key_name,
        threads_per_core=threads_per_core,
        storage=storage,
        fsx_file_system_id=fsx_file_system_id,
        s3_data_repository_path=s3_data_repository_path,
        storage_capacity_gib=storage_capacity_gib,
        created_by=actor,
    )
    cluster.full_clean(exclude=["cloud_name"])
    cluster.save()
    cluster.cloud_name = cloud_name_for(cluster_id=cluster.pk, name=name, attempt=1)
    cluster.save(update_fields=["cloud_name"])
    rows = []
    if kind in CONTROLLER_TYPES:
        group_name, instance_type = CONTROLLER_TYPES[kind]
        rows.append(
            ClusterInstanceGroup(
                organization=organization,
                cluster=cluster,
                name=group_name,
                role=ClusterInstanceGroup.Role.CONTROLLER,
                instance_type=instance_type,
                instance_count=1,
            )
        )
    merged: dict[str, int] = defaultdict(int)
    for group in groups:
        merged[group.instance_type] += group.count
    rows += [
        ClusterInstanceGroup(
            organization=organization,
            cluster=cluster,
            name=worker_group_name(instance_type),
            role=ClusterInstanceGroup.Role.WORKER,
            instance_type=instance_type,
            instance_count=count,
        )
        for instance_type, count in merged.items()
    ]
    ClusterInstanceGroup.objects.bulk_create(rows)
    ClusterEvent.objects.create(
        organization=organization,
        cluster=cluster,
        to_status=Status.REQUESTED,
        actor=actor,
        message=record_text(gettext_noop("Requested")),
    )
    workers = ", ".join(f"{count} × {instance_type}" for instance_type, count in merged.items())
    _audit(cluster, actor, "cluster.created", workers=[None, workers])
    # Enqueued only if this transaction commits: the worker never sees a cluster that does not exist.
    queue.send_on_commit(tasks.provision_cluster, cluster.pk, on_refused=lambda: reconcile.never_sent(cluster.pk))
    return cluster


# What the audit trail calls the cluster actions recorded here (registered by workloads.apps).
AUDIT_ACTIONS = {
    "cluster.created": gettext_lazy("created the cluster"),
    "cluster.retried": gettext_lazy("provisioned the cluster again"),
    "cluster.deletion_requested": gettext_lazy("asked to delete the cluster"),
}
AUDIT_DETAILS = {"workers": (gettext_lazy("Workers"), None)}  # the details that are not the cluster's fields


def _audit(cluster: Cluster, actor, action: str, comment: str = "", **changes) -> None:
    """Who did what to which cluster, on which allocation, in the program's audit trail."""
    record_audit(
        actor=actor,
        organization=cluster.organization,
        action=action,
        target=cluster,
        changes={"allocation": [None, f"A-{cluster.allocation_id}"], **changes},
        comment=comment,
    )


@transaction.atomic
def retry_cluster(*, cluster: Cluster, actor) -> Cluster:
    """A failed cluster gets a new attempt under a new deterministic name; the failed one is cleaned up."""
    if not cluster.can_retry:
        raise ValidationError(_("Only a cluster that failed to provision can be retried."))
    groups = [
        GroupRequest(g.instance_type, g.instance_count)
        for g in cluster.groups.filter(role=ClusterInstanceGroup.Role.WORKER)
    ]
    check_allocation(
        organization=cluster.organization,
        allocation=cluster.allocation,
        region=cluster.region,
        groups=groups,
        exclude_cluster_id=cluster.pk,
    )
    old_name = cluster.cloud_name
    attempt = cluster.attempt + 1
    new_name = cloud_name_for(cluster_id=cluster.pk, name=cluster.name, attempt=attempt)
    if not transition(
        cluster_id=cluster.pk,
        to=Status.REQUESTED,
        message=record_text(gettext_noop("Retry %(attempt)s requested"), attempt=attempt),
        actor=actor,
        attempt=attempt,
        cloud_name=new_name,
        cloud_id="",
        last_error="",
        retries=0,
        next_attempt_at=None,
        running_until=None,
        **progress.RELEASED,  # a new attempt: nothing of an earlier one's claim is left to look late
    ):
        raise ValidationError(_("The cluster changed meanwhile: reload the page."))
    queue.send_on_commit(tasks.delete_cloud_cluster, cluster.pk, old_name)
    queue.send_on_commit(tasks.provision_cluster, cluster.pk, on_refused=lambda: reconcile.never_sent(cluster.pk))
    cluster.refresh_from_db()
    _audit(cluster, actor, "cluster.retried", attempt=[attempt - 1, attempt])
    return cluster


@transaction.atomic
def request_delete(*, cluster: Cluster, actor, why: str = gettext_noop("Deletion requested")) -> Cluster:
    if not transition(cluster_id=cluster.pk, to=Status.DELETING, message=record_text(why), actor=actor):
        raise ValidationError(
            _("A cluster that is %(status)s cannot be deleted.") % {"status": cluster.get_status_display()}
        )
    queue.send_on_commit(tasks.delete_cluster, cluster.pk)
    cluster.refresh_from_db()
    _audit(cluster, actor, "cluster.deletion_requested", comment=why if why != "Deletion requested" else "")
    return cluster


def clusters_to_delete(allocation: Allocation) -> list[Cluster]:
    """The clusters revoking `allocation` deletes, judged as if it were revoked already: its own, then, since a
    cluster may draw on the org's whole allowance of its type, the newest others until what the org's clusters
    hold fits the allocations it has left. Reads only: the revoke page names them before a manager confirms."""
    doomed = [
        cluster
        for cluster in allocation.clusters.exclude(status__in=[Status.DELETING, Status.DELETED]).order_by("pk")
        if cluster.can_delete
    ]
    organization, region = allocation.organization, allocation.pool.region
    instance_type = allocation.pool.instance_type.api_name
    remaining = active_allocations(organization).exclude(pk=allocation.pk).select_related("pool__instance_type")
    allowed = allowed_per_type(remaining, region)
    workers = Q(groups__instance_type=instance_type, groups__role=ClusterInstanceGroup.Role.WORKER)
    holding = list(
        Cluster.objects.for_org(organization)
        .filter(status__in=Cluster.LIVE, region=region)
        .exclude(status=Status.DELETING)
        .exclude(pk__in=[cluster.pk for cluster in doomed])
        .annotate(held=Sum("groups__instance_count", filter=workers))
        .filter(held__gt=0)
        .order_by("-created_at", "-pk")
    )
    held = sum(cluster.held for cluster in holding)
    for cluster in holding:
        if held <= allowed.get(instance_type, 0):
            break
        if cluster.can_delete:
            doomed.append(cluster)
            held -= cluster.held
    return doomed


def doomed_clusters(allocation: Allocation) -> list[DoomedCluster]:
    """clusters_to_delete as the capacity pages and email name them (registered in tenants by workloads.apps)."""
    return [
        DoomedCluster(cluster.name, cluster.get_status_display(), reverse("clusters:detail", args=[cluster.pk]))
        for cluster in clusters_to_delete(allocation)
    ]


def delete_clusters_of_revoked_allocation(*, allocation, user, **signal) -> None:
    """tenants.signals.allocation_revoked: the instances go back to the pool, so the clusters holding them go
    (clusters_to_delete says which)."""
    why = gettext_noop("Deletion requested: its allocation was revoked")
    for cluster in clusters_to_delete(allocation):
        request_delete(cluster=cluster, actor=user, why=why)
