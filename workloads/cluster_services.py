"""Cluster lifecycle: every write to clusters, their nodes, health events and node intervals.

Views, the API and Celery tasks parse input and call one function here. Status changes are
compare-and-set (`transition`), so a duplicate task, a late poll and a user's click can race without
ever skipping a state or recording a change twice. Cloud calls go through portal.cloud only.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max, Q, Sum
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, gettext_noop

from portal import cloud
from portal.cloud import CloudStatus, ClusterDescription, NodeInfo, parallelcluster
from tenants.models import Allocation, Organization
from workloads.models import (
    Cluster,
    ClusterEvent,
    ClusterInstanceGroup,
    ClusterNode,
    HealthEvent,
    NodeInterval,
    OrgCloudSettings,
    Workload,
)

log = logging.getLogger(__name__)
Status = Cluster.Status

# The Slurm controller (HyperPod) or head node (ParallelCluster): not accelerator capacity, so it
# does not count against the allocation.
CONTROLLER_TYPES = {
    Cluster.Kind.HYPERPOD_SLURM: ("controller-machine", "m5.12xlarge"),
    Cluster.Kind.PARALLELCLUSTER: ("head-node", "m5.8xlarge"),
}
NODE_HEALTH_KINDS = {"Failure": HealthEvent.Kind.NODE_FAILURE, "NotFound": HealthEvent.Kind.NODE_NOT_FOUND}


@dataclass(frozen=True)
class GroupRequest:
    instance_type: str
    count: int


# --- Names and specs ------------------------------------------------------------------------------


def cloud_name_for(*, cluster_id: int, name: str, attempt: int) -> str:
    """Deterministic per attempt: the same task run again names the same cloud cluster."""
    base = f"fmp-{cluster_id}-{name}" + (f"-r{attempt}" if attempt > 1 else "")
    return base[:60].rstrip("-")


def worker_group_name(instance_type: str) -> str:
    return "workers-" + instance_type.replace(".", "-")


def build_spec(cluster: Cluster, groups: Iterable[ClusterInstanceGroup]) -> cloud.ClusterSpec:
    return cloud.ClusterSpec(
        name=cluster.cloud_name,
        region=cluster.region,
        groups=tuple(
            cloud.GroupSpec(
                name=g.name, instance_type=g.instance_type, count=g.instance_count, role=cloud.GroupRole(g.role)
            )
            for g in groups
        ),
        subnet_ids=tuple(cluster.subnet_ids),
        security_group_ids=tuple(cluster.security_group_ids),
        lifecycle_s3_uri=cluster.lifecycle_s3_uri,
        execution_role_arn=cluster.execution_role_arn,
        threads_per_core=cluster.threads_per_core,
        eks_cluster_arn=cluster.eks_cluster_arn,
        ssh_key_name=cluster.ssh_key_name,
        storage=cloud.StorageSpec(
            kind=cloud.StorageKind(cluster.storage),
            file_system_id=cluster.fsx_file_system_id,
            s3_data_repository_path=cluster.s3_data_repository_path,
            capacity_gib=cluster.storage_capacity_gib,
        ),
        tags=(
            ("fm-portal:organization", cluster.organization.slug),
            ("fm-portal:cluster-id", str(cluster.pk)),
        ),
    )


def provider_for(cluster: Cluster):
    session = cloud.session_for(cloud.AccountAccess.for_organization(cluster.organization, cluster.region))
    return cloud.get_provider(cluster.kind, session)


# --- Compare-and-set status changes ------------------------------------------------------------


@transaction.atomic
def transition(*, cluster_id: int, to: str, message: str = "", actor=None, **fields) -> bool:
    """Move a cluster to `to` if the lifecycle allows it from its current status; record the change once.

    Returns False (and writes nothing) when another actor got there first or the move is not allowed.
    """
    current = Cluster.objects.filter(pk=cluster_id).values_list("status", "organization_id").first()
    if current is None:
        return False
    status, organization_id = current
    if to not in Cluster.TRANSITIONS[status]:
        return False
    now = timezone.now()
    changed = Cluster.objects.filter(pk=cluster_id, status=status).update(
        status=to, status_message=message, status_changed_at=now, **fields
    )
    if changed:
        ClusterEvent.objects.create(
            organization_id=organization_id,
            cluster_id=cluster_id,
            from_status=status,
            to_status=to,
            message=message,
            actor=actor,
        )
    return bool(changed)


def record_text(message: str, **params) -> str:
    """Timeline text in the record's language (LANGUAGE_CODE), whichever language the person who acted reads:
    the worker writes in it too, and pages translate it back for each reader where the catalog knows it."""
    with translation.override(settings.LANGUAGE_CODE):
        return _(message) % params if params else _(message)


def note(cluster: Cluster, message: str, actor=None) -> None:
    ClusterEvent.objects.create(organization=cluster.organization, cluster=cluster, message=message, actor=actor)


# --- The allocation limit -------------------------------------------------------------------------


def active_allocations(organization: Organization, today=None):
    today = today or timezone.localdate()
    return Allocation.objects.for_org(organization).filter(
        status=Allocation.Status.ACTIVE, starts_on__lte=today, ends_on__gte=today
    )


def _allowed(allocations: Iterable[Allocation], region: str) -> dict[str, int]:
    allowed: dict[str, int] = defaultdict(int)
    for a in allocations:
        if a.pool.region == region:
            allowed[a.pool.instance_type.api_name] += a.instance_count
    return allowed


def _in_use(organization: Organization, region: str, *, exclude_cluster_id: int | None = None) -> dict[str, int]:
    """Worker instances per type that the org's live clusters in `region` hold."""
    rows = (
        ClusterInstanceGroup.objects.for_org(organization)
        .filter(cluster__status__in=Cluster.LIVE, cluster__region=region, role=ClusterInstanceGroup.Role.WORKER)
        .exclude(cluster_id=exclude_cluster_id)
        .values("instance_type")
        .annotate(total=Sum("instance_count"))
    )
    return {row["instance_type"]: row["total"] for row in rows}


@dataclass(frozen=True)
class Headroom:
    instance_type: str
    region: str
    allowed: int  # by the org's active allocations
    held: int  # by its live clusters

    @property
    def free(self) -> int:
        return max(self.allowed - self.held, 0)


def headroom(organization: Organization, allocations: Iterable[Allocation]) -> list[Headroom]:
    """Per instance type and region of the org's active `allocations`: what its clusters may still take."""
    allocations = list(allocations)
    rows = []
    for region in sorted({a.pool.region for a in allocations}):
        in_use = _in_use(organization, region)
        for instance_type, allowed in sorted(_allowed(allocations, region).items()):
            rows.append(Headroom(instance_type, region, allowed, in_use.get(instance_type, 0)))
    return rows


def check_allocation(
    *,
    organization: Organization,
    allocation: Allocation,
    region: str,
    groups: list[GroupRequest],
    exclude_cluster_id: int | None = None,
) -> None:
    """Instances per type and region may not exceed the org's active allocations, counting what its other
    live clusters already hold. Call inside a transaction: the allocation rows are locked."""
    if allocation.organization_id != organization.pk:
        raise ValidationError({"allocation": _("This allocation belongs to another organization.")})
    allocations = list(active_allocations(organization).select_related("pool__instance_type").select_for_update())
    if allocation.pk not in {a.pk for a in allocations}:
        raise ValidationError(
            {
                "allocation": _("This allocation is not active today (%(status)s).")
                % {"status": allocation.get_status_display()}
            }
        )
    if allocation.pool.region != region:
        raise ValidationError(
            {
                "region": _("The allocation is in %(region)s: the cluster must be there too.")
                % {"region": allocation.pool.region}
            }
        )
    allowed = _allowed(allocations, region)
    in_use = _in_use(organization, region, exclude_cluster_id=exclude_cluster_id)
    requested: dict[str, int] = defaultdict(int)
    for group in groups:
        requested[group.instance_type] += group.count
    errors = []
    for instance_type, count in sorted(requested.items()):
        limit, used = allowed.get(instance_type, 0), in_use.get(instance_type, 0)
        if limit == 0:
            errors.append(
                _("Your organization has no active allocation of %(type)s in %(region)s.")
                % {"type": instance_type, "region": region}
            )
        elif used + count > limit:
            errors.append(
                _(
                    "%(count)s × %(type)s is more than your allocation allows: %(limit)s in %(region)s, "
                    "of which %(used)s are already used by your other clusters (%(free)s free)."
                )
                % {
                    "count": count,
                    "type": instance_type,
                    "limit": limit,
                    "region": region,
                    "used": used,
                    "free": max(limit - used, 0),
                }
            )
    if errors:
        raise ValidationError({"instance_count": errors})


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
    from workloads import cluster_tasks

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
    # Enqueued only if this transaction commits: the worker never sees a cluster that does not exist.
    cluster_tasks.provision_cluster.delay_on_commit(cluster.pk)
    return cluster


@transaction.atomic
def retry_cluster(*, cluster: Cluster, actor) -> Cluster:
    """A failed cluster gets a new attempt under a new deterministic name; the failed one is cleaned up."""
    from workloads import cluster_tasks

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
    ):
        raise ValidationError(_("The cluster changed meanwhile: reload the page."))
    cluster_tasks.delete_cloud_cluster.delay_on_commit(cluster.pk, old_name)
    cluster_tasks.provision_cluster.delay_on_commit(cluster.pk)
    cluster.refresh_from_db()
    return cluster


@transaction.atomic
def request_delete(*, cluster: Cluster, actor, why: str = gettext_noop("Deletion requested")) -> Cluster:
    from workloads import cluster_tasks

    if not transition(cluster_id=cluster.pk, to=Status.DELETING, message=record_text(why), actor=actor):
        raise ValidationError(
            _("A cluster that is %(status)s cannot be deleted.") % {"status": cluster.get_status_display()}
        )
    cluster_tasks.delete_cluster.delay_on_commit(cluster.pk)
    cluster.refresh_from_db()
    return cluster


def delete_clusters_of_revoked_allocation(*, allocation, user, **signal) -> None:
    """tenants.signals.allocation_revoked: the instances go back to the pool, so the clusters holding them go —
    the allocation's own, then, since a cluster may draw on the org's whole allowance of its type, the newest
    others until what the org's clusters hold fits the allocations it has left."""
    why = gettext_noop("Deletion requested: its allocation was revoked")
    for cluster in allocation.clusters.exclude(status__in=[Status.DELETING, Status.DELETED]):
        if cluster.can_delete:
            request_delete(cluster=cluster, actor=user, why=why)
    organization, region = allocation.organization, allocation.pool.region
    instance_type = allocation.pool.instance_type.api_name
    allowed = _allowed(active_allocations(organization).select_related("pool__instance_type"), region)
    workers = Q(groups__instance_type=instance_type, groups__role=ClusterInstanceGroup.Role.WORKER)
    holding = list(
        Cluster.objects.for_org(organization)
        .filter(status__in=Cluster.LIVE, region=region)
        .exclude(status=Status.DELETING)
        .annotate(held=Sum("groups__instance_count", filter=workers))
        .filter(held__gt=0)
        .order_by("-created_at", "-pk")
    )
    held = sum(cluster.held for cluster in holding)
    for cluster in holding:
        if held <= allowed.get(instance_type, 0):
            break
        if cluster.can_delete:
            request_delete(cluster=cluster, actor=user, why=why)
            held -= cluster.held


# --- Worker side: provisioning, deletion, polling ---------------------------------------------


def provision(cluster_id: int, *, provider_factory: Callable | None = None) -> str:
    """Idempotent: run it twice, or after a crash between the create call and the status save, and it
    finds the cloud cluster by its deterministic name instead of creating another."""
    cluster = Cluster.objects.select_related("organization").filter(pk=cluster_id).first()
    if cluster is None:
        return "missing"
    if cluster.status == Status.REQUESTED:
        transition(cluster_id=cluster_id, to=Status.PROVISIONING, message=_("Provisioning started"))
    elif cluster.status != Status.PROVISIONING:
        return "skipped"  # a duplicate delivery after the work was done, or the user deleted it
    cluster.refresh_from_db()
    if cluster.status != Status.PROVISIONING:
        return "skipped"
    groups = list(cluster.groups.order_by("role", "name"))
    try:
        provider = (provider_factory or provider_for)(cluster)
        description = provider.create(build_spec(cluster, groups))
        # Already in service (the emulator always is): list the nodes now, so the page that stops
        # polling at "in service" shows them without waiting for beat's next tick.
        nodes = None
        if description.status in (CloudStatus.IN_SERVICE, CloudStatus.UPDATING):
            nodes = provider.list_nodes(description.name)
    except cloud.TransientCloudError:
        raise  # the task retries with backoff
    except cloud.CloudError as error:
        transition(cluster_id=cluster_id, to=Status.FAILED, message=error.message)
        return "failed"
    record_created(cluster_id, description, nodes)
    return "created"


def record_created(cluster_id: int, description: ClusterDescription, nodes: list[NodeInfo] | None = None) -> None:
    """Save what the create call answered. A separate step so tests can interrupt between the two."""
    if description.cloud_id:
        Cluster.objects.filter(pk=cluster_id, cloud_id="").update(cloud_id=description.cloud_id)
    cluster = Cluster.objects.select_related("organization").get(pk=cluster_id)
    apply_description(cluster, description, nodes=nodes)


def fail_after_retries(cluster_id: int, message: str) -> None:
    transition(
        cluster_id=cluster_id,
        to=Status.FAILED,
        message=_("Gave up after repeated transient errors: %(message)s") % {"message": message},
    )


def delete(cluster_id: int, *, provider_factory: Callable | None = None, cloud_name: str | None = None) -> str:
    """Ask the cloud to delete the cluster; mark it deleted once the cloud no longer knows it."""
    cluster = Cluster.objects.select_related("organization").filter(pk=cluster_id).first()
    if cluster is None:
        return "missing"
    if cloud_name is None and cluster.status != Status.DELETING:
        return "skipped"
    provider = (provider_factory or provider_for)(cluster)
    name = cloud_name or cluster.cloud_name
    try:
        provider.delete(name, storage_kind=cloud.StorageKind(cluster.storage))
    except cloud.TransientCloudError:
        raise
    except cloud.CloudError as error:
        if cloud_name is None:
            transition(cluster_id=cluster_id, to=Status.FAILED, message=f"delete: {error.message}")
        return "failed"
    if cloud_name is not None:
        return "cleaned"  # an earlier attempt's leftovers; the cluster itself lives on
    description = provider.describe(name)
    apply_description(cluster, description, nodes=None)
    return "deleted" if description.status == CloudStatus.NOT_FOUND else "deleting"


def poll_clusters(cluster_ids: list[int], *, provider_factory: Callable | None = None) -> dict[str, int]:
    """One batch of a poll cycle. A failure on one cluster is logged and never stops the others."""
    outcome = {"polled": 0, "errors": 0}
    clusters = Cluster.objects.select_related("organization").filter(pk__in=cluster_ids, status__in=Cluster.POLLED)
    providers: dict[tuple, object] = {}
    for cluster in clusters:
        try:
            key = (cluster.organization_id, cluster.region, cluster.kind)
            if key not in providers:
                providers[key] = (provider_factory or provider_for)(cluster)
            poll_one(cluster, providers[key])
            outcome["polled"] += 1
        except cloud.CloudError as error:
            outcome["errors"] += 1
            log.warning("poll of cluster %s failed: %s", cluster.pk, error.message)
            Cluster.objects.filter(pk=cluster.pk).update(last_polled_at=timezone.now())
    return outcome


def poll_one(cluster: Cluster, provider) -> None:
    description = provider.describe(cluster.cloud_name)
    nodes = None
    if description.status in (CloudStatus.IN_SERVICE, CloudStatus.UPDATING) and cluster.status != Status.DELETING:
        nodes = provider.list_nodes(cluster.cloud_name)
    elif description.status not in (CloudStatus.NOT_FOUND, CloudStatus.DELETING) and cluster.status == Status.DELETING:
        # Deleted in the portal but still there: a delete that raced provisioning. Ask again (idempotent).
        provider.delete(cluster.cloud_name, storage_kind=cloud.StorageKind(cluster.storage))
    apply_description(cluster, description, nodes=nodes)


@transaction.atomic
def apply_description(cluster: Cluster, description: ClusterDescription, *, nodes: list[NodeInfo] | None) -> None:
    """Bring the record in line with what the cloud says (and sync nodes when they were listed)."""
    now = timezone.now()
    status = cluster.status
    cloud_status = description.status
    Cluster.objects.filter(pk=cluster.pk).update(last_polled_at=now)
    if cloud_status == CloudStatus.NOT_FOUND:
        if status == Status.DELETING:
            if transition(cluster_id=cluster.pk, to=Status.DELETED, message=_("Deleted")):
                close_nodes(cluster, now)
        elif (
            status in (Status.IN_SERVICE, Status.DEGRADED) or (status == Status.PROVISIONING and cluster.cloud_id)
        ) and transition(
            cluster_id=cluster.pk,
            to=Status.FAILED,
            message=_("The cluster no longer exists in AWS (deleted outside the portal?)."),
        ):
            close_nodes(cluster, now)
        return
    if cloud_status == CloudStatus.FAILED:
        prefix = "delete: " if status == Status.DELETING else ""
        transition(
            cluster_id=cluster.pk,
            to=Status.FAILED,
            message=prefix + (description.failure_message or description.raw_status),
        )
        return
    if cloud_status == CloudStatus.DELETING:
        if status != Status.DELETING:
            transition(cluster_id=cluster.pk, to=Status.DELETING, message=_("Being deleted in AWS"))
        return
    if cloud_status == CloudStatus.CREATING or status == Status.DELETING:
        return  # still on its way; a deleting cluster is handled by poll_one
    # In service (or updating): healthy unless a node is not.
    if nodes is not None:
        sync_nodes(cluster, description, nodes, now)
    degraded = HealthEvent.objects.for_org(cluster.organization).filter(cluster=cluster, resolved_at=None).exists()
    target = Status.DEGRADED if degraded else Status.IN_SERVICE
    if target != status:
        message = _("Node health problem: see health events") if degraded else _("All nodes healthy")
        if status == Status.PROVISIONING and not degraded:
            message = _("In service")
        transition(cluster_id=cluster.pk, to=target, message=message)


def sync_nodes(cluster: Cluster, description: ClusterDescription, nodes: list[NodeInfo], now: datetime) -> None:
    """Upsert nodes, open/resolve health events, open/close run intervals. Repeating a poll changes nothing."""
    org = cluster.organization
    known = {n.instance_id: n for n in ClusterNode.objects.for_org(org).filter(cluster=cluster)}
    open_events = {
        (e.instance_id, e.kind): e for e in HealthEvent.objects.for_org(org).filter(cluster=cluster, resolved_at=None)
    }
    open_intervals = {i.node_id: i for i in NodeInterval.objects.for_org(org).filter(cluster=cluster, ended_at=None)}
    listed = set()
    to_create, to_update = [], []
    for info in nodes:
        listed.add(info.instance_id)
        node = known.get(info.instance_id)
        if node is None:
            node = ClusterNode(
                organization=org,
                cluster=cluster,
                instance_id=info.instance_id,
                first_seen_at=now,
            )
            to_create.append(node)
        elif (node.status, node.status_message, node.gone_at) != (info.status, info.message[:500], None):
            to_update.append(node)
        node.group_name, node.instance_type = info.group, info.instance_type
        node.status, node.status_message = info.status, info.message[:500]
        node.launch_time, node.last_seen_at, node.gone_at = info.launch_time, now, None
    ClusterNode.objects.bulk_create(to_create)
    unchanged = [n.pk for n in known.values() if n.instance_id in listed and n not in to_update]
    if unchanged:
        ClusterNode.objects.filter(pk__in=unchanged).update(last_seen_at=now)
    if to_update:
        ClusterNode.objects.bulk_update(
            to_update,
            ["group_name", "instance_type", "status", "status_message", "launch_time", "last_seen_at", "gone_at"],
        )
    nodes_by_id = {**known, **{n.instance_id: n for n in to_create}}

    new_events, resolved = [], []
    new_intervals = []
    reopened = [n.pk for n in known.values() if n.instance_id in listed and n.pk not in open_intervals]
    last_ends = dict(
        NodeInterval.objects.for_org(org)
        .filter(node_id__in=reopened)
        .values("node_id")
        .annotate(last=Max("ended_at"))
        .values_list("node_id", "last")
    )
    for info in nodes:
        node = nodes_by_id[info.instance_id]
        for cloud_word, kind in NODE_HEALTH_KINDS.items():
            event = open_events.get((info.instance_id, kind))
            if info.status == cloud_word and event is None:
                new_events.append(
                    HealthEvent(
                        organization=org,
                        cluster=cluster,
                        node=node,
                        instance_id=info.instance_id,
                        group_name=info.group,
                        kind=kind,
                        severity=HealthEvent.Severity.CRITICAL,
                        message=info.message or info.status,
                        observed_at=now,
                    )
                )
            elif info.status != cloud_word and event is not None:
                event.resolved_at = now
                resolved.append(event)
        # A listed node is running (and billed) from its launch: one open interval per node. A node
        # seen again after its interval was closed (gone from one listing, back in the next) restarts
        # where the closed one ended, so no hour is ever counted twice.
        if node.pk not in open_intervals:
            started = info.launch_time or now
            if node.pk in last_ends and last_ends[node.pk] > started:
                started = last_ends[node.pk]
            new_intervals.append(
                NodeInterval(
                    organization=org,
                    cluster=cluster,
                    node=node,
                    instance_id=node.instance_id,
                    instance_type=node.instance_type,
                    started_at=started,
                )
            )

    # Nodes no longer listed: replaced or terminated. Close their interval, flag the replacement.
    gone = [n for n in known.values() if n.instance_id not in listed and n.gone_at is None]
    for node in gone:
        node.gone_at = now
        if (node.instance_id, HealthEvent.Kind.NODE_REPLACED) not in open_events:
            new_events.append(
                HealthEvent(
                    organization=org,
                    cluster=cluster,
                    node=node,
                    instance_id=node.instance_id,
                    group_name=node.group_name,
                    kind=HealthEvent.Kind.NODE_REPLACED,
                    severity=HealthEvent.Severity.WARNING,
                    message=_("Node %(id)s of %(group)s is no longer listed: replaced or terminated.")
                    % {"id": node.instance_id, "group": node.group_name},
                    observed_at=now,
                )
            )
        for event_key in (
            (node.instance_id, HealthEvent.Kind.NODE_FAILURE),
            (node.instance_id, HealthEvent.Kind.NODE_NOT_FOUND),
        ):
            if event_key in open_events:
                open_events[event_key].resolved_at = now
                resolved.append(open_events[event_key])
    if gone:
        ClusterNode.objects.bulk_update(gone, ["gone_at"])
        NodeInterval.objects.for_org(org).filter(node__in=gone, ended_at=None).update(ended_at=now)

    # A replacement is over when its group is back to full strength with healthy nodes.
    healthy_per_group: dict[str, int] = defaultdict(int)
    for info in nodes:
        if info.status == "Running":
            healthy_per_group[info.group] += 1
    targets = {g.name: g.target_count for g in description.groups}
    if not targets:
        targets = {g.name: g.instance_count for g in cluster.groups.all()}
    for (instance_id, kind), event in open_events.items():
        if kind == HealthEvent.Kind.NODE_REPLACED and instance_id in listed:
            event.resolved_at = now  # it came back under the same id
            resolved.append(event)
        elif kind == HealthEvent.Kind.NODE_REPLACED and healthy_per_group[event.group_name] >= targets.get(
            event.group_name, 1
        ):
            event.resolved_at = now
            resolved.append(event)
    for event in new_events:
        if event.kind == HealthEvent.Kind.NODE_REPLACED and healthy_per_group[event.group_name] >= targets.get(
            event.group_name, 1
        ):
            # Already replaced by the time we looked: worth recording, nothing left to wait for.
            event.resolved_at = now
    HealthEvent.objects.bulk_create(new_events)
    if resolved:
        HealthEvent.objects.bulk_update(resolved, ["resolved_at"])
    NodeInterval.objects.bulk_create(new_intervals, ignore_conflicts=True)


def close_nodes(cluster: Cluster, now: datetime) -> None:
    """The cluster is gone: every node with it, every interval closed, every open health event resolved."""
    org = cluster.organization
    ClusterNode.objects.for_org(org).filter(cluster=cluster, gone_at=None).update(gone_at=now)
    NodeInterval.objects.for_org(org).filter(cluster=cluster, ended_at=None).update(ended_at=now)
    HealthEvent.objects.for_org(org).filter(cluster=cluster, resolved_at=None).update(resolved_at=now)


def cluster_ids_to_poll(*, stale_after_seconds: int = 30) -> list[int]:
    """Clusters the cloud may have changed; skip any polled moments ago (a duplicate beat tick)."""
    cutoff = timezone.now() - timedelta(seconds=stale_after_seconds)
    return list(
        Cluster.objects.to_poll()
        .filter(Q(last_polled_at__isnull=True) | Q(last_polled_at__lt=cutoff))
        .order_by("last_polled_at", "pk")
        .values_list("pk", flat=True)
    )


def node_hours(cluster: Cluster, *, now: datetime | None = None) -> float:
    """Instance-hours the cluster's nodes ran (open intervals count up to now)."""
    now = now or timezone.now()
    total = 0.0
    for interval in NodeInterval.objects.for_org(cluster.organization).filter(cluster=cluster):
        total += ((interval.ended_at or now) - interval.started_at).total_seconds() / 3600
    return total
