"""How many instances an organization's clusters may hold: per instance type and region, no more than its
active allocations allow, counting what its other live clusters already hold."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db.models import Sum
from django.utils import timezone
from django.utils.translation import gettext as _

from tenants.models import Allocation, Organization
from workloads.clusters.models import Cluster, ClusterInstanceGroup


@dataclass(frozen=True)
class GroupRequest:
    """Worker instances of one type a cluster asks for."""

    instance_type: str
    count: int


def active_allocations(organization: Organization, today=None):
    today = today or timezone.localdate()
    return Allocation.objects.for_org(organization).filter(
        status=Allocation.Status.ACTIVE, starts_on__lte=today, ends_on__gte=today
    )


def allowed_per_type(allocations: Iterable[Allocation], region: str) -> dict[str, int]:
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
class ClusterAllowance:
    """What one org's clusters may hold of one instance type in one region, and what they hold now."""

    instance_type: str
    region: str
    allowed: int  # by the org's active allocations
    held: int  # by its live clusters

    @property
    def free(self) -> int:
        return max(self.allowed - self.held, 0)


def allowances(organization: Organization, allocations: Iterable[Allocation]) -> list[ClusterAllowance]:
    """Per instance type and region of the org's active `allocations`: what its clusters may still take."""
    allocations = list(allocations)
    rows = []
    for region in sorted({a.pool.region for a in allocations}):
        in_use = _in_use(organization, region)
        for instance_type, allowed in sorted(allowed_per_type(allocations, region).items()):
            rows.append(ClusterAllowance(instance_type, region, allowed, in_use.get(instance_type, 0)))
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
    allowed = allowed_per_type(allocations, region)
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
