"""The worker side of clusters: provisioning, deletion and polling, each idempotent.

A provisioning task run twice, or after a crash between the create call and the status save, finds the cloud
cluster by its deterministic name instead of creating another. Cloud calls go through portal.cloud only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from datetime import timedelta

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext as _

from portal import cloud
from portal.cloud import CloudStatus, ClusterDescription, NodeInfo
from workloads.clusters import progress
from workloads.clusters.lifecycle import transition
from workloads.clusters.models import Cluster, ClusterInstanceGroup
from workloads.clusters.sync import close_nodes, sync_listings
from workloads.health.services import clusters_with_open_events

log = logging.getLogger(__name__)
Status = Cluster.Status


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


def provider_for(cluster: Cluster, *, profile: str = "task"):
    access = cloud.AccountAccess.for_organization(cluster.organization, cluster.region)
    return cloud.get_provider(cluster.kind, cloud.session_for(access, profile=profile))


def poll_provider_for(cluster: Cluster):
    return provider_for(cluster, profile="poll")


def provision(cluster_id: int, *, provider_factory: Callable | None = None, claim: str | None = None) -> str:
    """Idempotent: run it twice, or after a crash between the create call and the status save, and it
    finds the cloud cluster by its deterministic name instead of creating another.

    `claim` is the token of the attempt running it (workloads.clusters.progress): a deletion requested while the
    create call is out waits for that claim, and this attempt deletes what it created (record_created)."""
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
    status = record_created(cluster_id, description, nodes)
    if status in (Status.DELETING, Status.DELETED):
        return delete_created(cluster, provider, status=status, claim=claim)
    return "created"


def record_created(cluster_id: int, description: ClusterDescription, nodes: list[NodeInfo] | None = None) -> str:
    """Save what the create call answered, if the cluster is still provisioning; returns the status it found.
    A separate step so tests can interrupt between the two."""
    with transaction.atomic():
        # The row lock orders this against a deletion request: either the deletion sees the cloud id and the
        # status this writes, or this sees `deleting` and the attempt deletes what it created.
        status = Cluster.objects.select_for_update().filter(pk=cluster_id).values_list("status", flat=True).first()
        if status != Status.PROVISIONING:
            return status
        if description.cloud_id:
            Cluster.objects.filter(pk=cluster_id, cloud_id="").update(cloud_id=description.cloud_id)
        cluster = Cluster.objects.select_related("organization").get(pk=cluster_id)
        apply_description(cluster, description, nodes=nodes)
    return status


def delete_created(cluster: Cluster, provider, *, status: str, claim: str | None) -> str:
    """A deletion was requested while this attempt's create call was out: it could not conclude while the attempt
    held its claim (apply_description), so the attempt deletes what it created, under the same deterministic name.
    The claim goes first, so the deletion can conclude; if this dies before the delete call, the poller asks the
    cloud to delete the cluster it finds under the name (ask)."""
    if claim is not None:
        progress.settled(cluster.pk, claim=claim)
    storage_kind = cloud.StorageKind(cluster.storage)
    if status == Status.DELETED:
        # Only an attempt that lost its claim (no heartbeat for a whole lease, then back) gets here: the deletion
        # concluded without it, so nobody else would delete this.
        log.warning("cluster %s was deleted while %s was being created: deleting it", cluster.pk, cluster.cloud_name)
        try:
            provider.delete(cluster.cloud_name, storage_kind=storage_kind)
        except cloud.CloudError:
            log.exception("cluster %s: could not delete %s, left in AWS", cluster.pk, cluster.cloud_name)
            raise
        return "deleted"
    return delete(cluster.pk, provider_factory=lambda cluster: provider)


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
    apply_description(cluster, provider.describe(name), nodes=None)
    # Not found is not always deleted: a provisioning attempt holding the cluster may still be creating it.
    status = Cluster.objects.filter(pk=cluster_id).values_list("status", flat=True).first()
    return "deleted" if status == Status.DELETED else "deleting"


def poll_clusters(cluster_ids: list[int], *, provider_factory: Callable | None = None) -> dict[str, int]:
    """One batch of a poll cycle: ask the cloud about each cluster, then apply every answer in one transaction
    (apply_answers). A failure on one cluster is logged and never stops the others.

    An account whose endpoint failed transiently (unreachable, timing out) is skipped for the rest of the batch:
    its other clusters would only wait out the same timeout, and the next tick asks again."""
    outcome = {"polled": 0, "errors": 0, "skipped": 0}
    clusters = Cluster.objects.select_related("organization").filter(pk__in=cluster_ids, status__in=Cluster.POLLED)
    providers: dict[tuple, object] = {}
    unreachable: set[tuple] = set()
    answers: list[Answer] = []
    for cluster in clusters:
        key = (cluster.organization_id, cluster.region, cluster.kind)
        if key in unreachable:
            outcome["skipped"] += 1
            continue
        try:
            if key not in providers:
                providers[key] = (provider_factory or poll_provider_for)(cluster)
            answers.append(ask(cluster, providers[key]))
            outcome["polled"] += 1
        except cloud.CloudError as error:
            outcome["errors"] += 1
            log.warning("poll of cluster %s failed: %s", cluster.pk, error.message)
            if isinstance(error, cloud.TransientCloudError):
                unreachable.add(key)
    apply_answers(answers, recheck=True)
    return outcome


Answer = tuple[Cluster, ClusterDescription, list[NodeInfo] | None]


def ask(cluster: Cluster, provider) -> Answer:
    """The cloud's calls for one cluster (describe, and list its nodes when in service); nothing written."""
    description = provider.describe(cluster.cloud_name)
    nodes = None
    if description.status in (CloudStatus.IN_SERVICE, CloudStatus.UPDATING) and cluster.status != Status.DELETING:
        nodes = provider.list_nodes(cluster.cloud_name)
    elif description.status not in (CloudStatus.NOT_FOUND, CloudStatus.DELETING) and cluster.status == Status.DELETING:
        # Deleted in the portal but still there: a delete that raced provisioning. Ask again (idempotent).
        provider.delete(cluster.cloud_name, storage_kind=cloud.StorageKind(cluster.storage))
    return cluster, description, nodes


def apply_description(cluster: Cluster, description: ClusterDescription, *, nodes: list[NodeInfo] | None) -> None:
    """Bring the record in line with what the cloud says (and sync nodes when they were listed)."""
    apply_answers([(cluster, description, nodes)])


@transaction.atomic
def apply_answers(answers: list[Answer], *, recheck: bool = False) -> None:
    """Bring each cluster's record in line with what the cloud answered, all in one transaction: the clusters in
    service (the steady state) together — one read and one write of each kind for the batch's nodes, health
    events and run intervals (workloads.clusters.sync.sync_listings) — the others one by one.

    `recheck`: the answers came from calls made a while ago (a poll batch's); a cluster whose status moved since it
    was read (a deletion requested meanwhile) is left to the next poll, which asks about it as it is now."""
    if recheck and answers:
        current = dict(Cluster.objects.filter(pk__in=[c.pk for c, _d, _n in answers]).values_list("pk", "status"))
        answers = [(c, d, n) for c, d, n in answers if current.get(c.pk) == c.status]
    if not answers:
        return
    now = timezone.now()
    Cluster.objects.filter(pk__in=[c.pk for c, _d, _n in answers]).update(last_polled_at=now)
    in_service = []
    for cluster, description, nodes in answers:
        if description.cloud_id and not cluster.cloud_id:
            # Created by a run that died before recording it, and found under its deterministic name: adopt it.
            Cluster.objects.filter(pk=cluster.pk, cloud_id="").update(cloud_id=description.cloud_id)
            cluster.cloud_id = description.cloud_id
        if not _apply_change(cluster, description, now):
            in_service.append((cluster, description, nodes))
    if not in_service:
        return
    # In service (or updating): healthy unless a node is not.
    sync_listings([(c, d, n) for c, d, n in in_service if n is not None], now)
    degraded = clusters_with_open_events([c.pk for c, _d, _n in in_service])
    for cluster, _d, _n in in_service:
        is_degraded = cluster.pk in degraded
        target = Status.DEGRADED if is_degraded else Status.IN_SERVICE
        if target != cluster.status:
            message = _("Node health problem: see health events") if is_degraded else _("All nodes healthy")
            if cluster.status == Status.PROVISIONING and not is_degraded:
                message = _("In service")
            transition(cluster_id=cluster.pk, to=target, message=message)


def _apply_change(cluster: Cluster, description: ClusterDescription, now) -> bool:
    """A cluster that is not (or no longer) in service: the status it moves to. False when it is in service."""
    status = cluster.status
    cloud_status = description.status
    if cloud_status == CloudStatus.NOT_FOUND:
        if status == Status.DELETING:
            if Cluster.objects.filter(pk=cluster.pk).filter(progress.live_claim(now)).exists():
                # A provisioning attempt holds the cluster and its create call may still be out: not deleted yet.
                # That attempt deletes what it creates (delete_created); if it dies, its lease runs out and a poll
                # after that finds what it left under the name.
                return True
            if transition(cluster_id=cluster.pk, to=Status.DELETED, message=_("Deleted"), **progress.RELEASED):
                close_nodes(cluster, now)
        elif (
            status in (Status.IN_SERVICE, Status.DEGRADED) or (status == Status.PROVISIONING and cluster.cloud_id)
        ) and transition(
            cluster_id=cluster.pk,
            to=Status.FAILED,
            message=_("The cluster no longer exists in AWS (deleted outside the portal?)."),
        ):
            close_nodes(cluster, now)
        return True
    if cloud_status == CloudStatus.FAILED:
        prefix = "delete: " if status == Status.DELETING else ""
        transition(
            cluster_id=cluster.pk,
            to=Status.FAILED,
            message=prefix + (description.failure_message or description.raw_status),
        )
        return True
    if cloud_status == CloudStatus.DELETING:
        if status != Status.DELETING:
            transition(cluster_id=cluster.pk, to=Status.DELETING, message=_("Being deleted in AWS"))
        return True
    # Still on its way; a deleting cluster is handled by ask.
    return cloud_status == CloudStatus.CREATING or status == Status.DELETING


# A poll claim is the cluster's `last_polled_at`, set when a batch claims it: for this long nobody else polls the
# cluster, whether its batch is still running (its hard time limit is no longer) or died.
POLL_CLAIM_SECONDS = 30


def _due(now) -> Q:
    cutoff = now - timedelta(seconds=POLL_CLAIM_SECONDS)
    return Q(last_polled_at__isnull=True) | Q(last_polled_at__lt=cutoff)


def count_clusters_to_poll() -> int:
    """Clusters the cloud may have changed and no batch holds: what beat sends batches for."""
    return Cluster.objects.to_poll().filter(_due(timezone.now())).count()


@transaction.atomic
def claim_clusters_to_poll(*, limit: int | None = None) -> list[int]:
    """Claim up to `limit` of the clusters due for a poll, the longest unpolled first, for POLL_CLAIM_SECONDS:
    `last_polled_at` is set at once, so no other batch takes them while this one asks the cloud, and a batch that
    dies leaves them claimed for POLL_CLAIM_SECONDS, no longer.

    Each batch claims as it starts, not beat as it sends: any number of workers take batches side by side
    (PostgreSQL's SKIP LOCKED passes over the rows another worker is claiming; SQLite's writers take turns, its
    transactions being IMMEDIATE), and a batch that waited in the queue claims what is due when it runs."""
    now = timezone.now()
    due = (
        Cluster.objects.to_poll()
        .filter(_due(now))
        .order_by(F("last_polled_at").asc(nulls_first=True), "pk")
        .select_for_update(skip_locked=True)
        .values_list("pk", flat=True)
    )
    ids = list(due[:limit] if limit else due)
    Cluster.objects.filter(pk__in=ids).update(last_polled_at=now)
    return ids
