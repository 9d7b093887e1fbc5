"""Does a workload's parallelism layout fit what it runs on? The layout needs TP × PP × DP ranks (expert parallelism
shards the data-parallel replicas, as in Megatron-LM and NeMo, so it adds none); that is set beside what the linked
allocation and the workload's live clusters hold. A rank is a GPU, or on Trainium a NeuronCore: a trn1.32xlarge
runs 32 (InstanceType.ranks_per_instance), though it has 16 chips. The pages call ranks "accelerators", as people
do. A misfit is a warning, never a refusal: a team records the layout it plans before the capacity is granted."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Sum
from django.utils.translation import gettext as _

from tenants.capacity.pools import estimate_for
from tenants.models import Allocation, InstanceType
from workloads.clusters.models import Cluster, ClusterInstanceGroup
from workloads.records.models import Workload


@dataclass(frozen=True)
class Fit:
    needed: int  # ranks the layout needs
    allocated: int | None = None  # ranks of the linked allocation; None without one
    in_clusters: int | None = None  # ranks of the workload's live clusters' workers; None without any
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "needed": self.needed,
            "allocated": self.allocated,
            "in_clusters": self.in_clusters,
            "warnings": self.warnings,
        }


def layout_fit(
    *,
    tp: int,
    pp: int,
    dp: int,
    ep: int = 1,
    moe: bool = False,
    allocation: Allocation | None = None,
    in_clusters: int | None = None,
) -> Fit:
    needed = tp * pp * dp
    warnings = []
    allocated = None
    if moe and ep > 1 and dp % ep:
        warnings.append(
            _("Expert parallelism shards the data-parallel replicas: DP %(dp)s is not a multiple of EP %(ep)s.")
            % {"dp": dp, "ep": ep}
        )
    if allocation is not None:
        per_instance = allocation.pool.instance_type.ranks_per_instance
        allocated = allocation.ranks
        if allocation.status in (allocation.Status.REVOKED, allocation.Status.EXPIRED):
            warnings.append(
                _("Allocation %(id)s is %(status)s: link the allocation the workload runs on.")
                % {"id": allocation.number, "status": allocation.get_status_display().lower()}
            )
        if needed > allocated:
            most_dp = allocated // (tp * pp)
            if moe and ep > 1:
                most_dp -= most_dp % ep  # the replicas still divide into expert-parallel groups
            values = {
                "needed": f"{needed:,}",
                "id": allocation.number,
                "held": f"{allocated:,}",
                "count": allocation.instance_count,
                "type": allocation.pool.instance_type.api_name,
                "tp": tp,
                "pp": pp,
                "dp": most_dp,
            }
            if values["dp"]:
                message = _(
                    "The layout needs %(needed)s accelerators; allocation %(id)s holds %(held)s (%(count)s × "
                    "%(type)s). With TP %(tp)s × PP %(pp)s, at most DP %(dp)s fits."
                )
            else:
                message = _(
                    "The layout needs %(needed)s accelerators; allocation %(id)s holds %(held)s (%(count)s × "
                    "%(type)s), fewer than TP %(tp)s × PP %(pp)s alone."
                )
            warnings.append(message % values)
        if tp > per_instance:
            warnings.append(
                _(
                    "Tensor parallelism %(tp)s spans more than one instance (%(per)s accelerators each): its "
                    "all-reduces cross the network at every layer."
                )
                % {"tp": tp, "per": per_instance}
            )
    if in_clusters and needed > in_clusters:
        warnings.append(
            _("The layout needs %(needed)s accelerators; this workload's clusters hold %(held)s.")
            % {"needed": f"{needed:,}", "held": f"{in_clusters:,}"}
        )
    return Fit(needed=needed, allocated=allocated, in_clusters=in_clusters, warnings=warnings)


def cluster_accelerators(workload: Workload | None) -> int | None:
    """Ranks in the worker groups of the workload's live clusters; None when it has none. Two queries."""
    if workload is None or workload.pk is None:
        return None
    groups = (
        ClusterInstanceGroup.objects.for_org(workload.organization_id)
        .filter(cluster__workload=workload, cluster__status__in=Cluster.LIVE, role=ClusterInstanceGroup.Role.WORKER)
        .values("instance_type")
        .annotate(instances=Sum("instance_count"))
        .order_by()
    )
    counts = {row["instance_type"]: row["instances"] for row in groups}
    if not counts:
        return None
    per_instance = dict(InstanceType.objects.filter(api_name__in=counts).values_list("api_name", "ranks_per_instance"))
    return sum(instances * per_instance.get(api_name, 0) for api_name, instances in counts.items())


def workload_fit(workload: Workload) -> Fit:
    """The fit of a saved workload: its allocation (select_related pool__instance_type to spare a query) and its
    live clusters."""
    return layout_fit(
        tp=workload.tensor_parallel,
        pp=workload.pipeline_parallel,
        dp=workload.data_parallel,
        ep=workload.expert_parallel,
        moe=workload.architecture == Workload.Architecture.MOE,
        allocation=workload.allocation,
        in_clusters=cluster_accelerators(workload),
    )


def workload_estimate(workload: Workload):
    """The compute and cost estimate of the workload's plan on its allocation — what the capacity request form
    computes (tenants.capacity.pools.estimate_for), at the MFU its request expected: None without an allocation."""
    allocation = workload.allocation
    if allocation is None:
        return None
    pool = allocation.pool
    request = getattr(allocation, "request", None)
    return estimate_for(
        instance_type=pool.instance_type,
        region=pool.region,
        program=pool.program,
        parameters=workload.parameter_count,
        tokens=workload.target_tokens,
        instance_count=allocation.instance_count,
        starts_on=allocation.starts_on,
        ends_on=allocation.ends_on,
        mfu=request.expected_mfu if request is not None else None,
    )
