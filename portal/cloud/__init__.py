"""The cloud layer: the only package that imports boto3.

`session_for(AccountAccess)` assumes a tenant's role; `get_provider(kind, session)` returns the provider
for a cluster kind, each with create / describe / list_nodes / delete and typed results.
"""

from portal.cloud.errors import CloudError, PermanentCloudError, ProviderUnavailable, TransientCloudError
from portal.cloud.session import AccountAccess, CloudSession, clear_session_cache, session_for
from portal.cloud.types import (
    CloudStatus,
    ClusterDescription,
    ClusterSpec,
    GroupRole,
    GroupSpec,
    NodeInfo,
    StorageKind,
    StorageSpec,
)

HYPERPOD_SLURM = "hyperpod_slurm"
HYPERPOD_EKS = "hyperpod_eks"
PARALLELCLUSTER = "parallelcluster"


def worst_case_seconds(kind: str) -> float:
    """The longest one cloud call of `kind` lasts before it gives up: a boto3 profile ("task", "poll":
    session.PROFILES) or "prometheus" (one query). A task declares the kinds it makes (its `cloud_calls`)."""
    from portal.cloud import prometheus, session

    if kind == "prometheus":
        return 2 * prometheus.QUERY_TIMEOUT  # connect, then read, no retry
    return session.worst_case_seconds(kind)


def get_provider(kind: str, session: CloudSession):
    """One provider per cluster kind; all share create / describe / list_nodes / delete."""
    from portal.cloud.hyperpod import HyperPodProvider
    from portal.cloud.parallelcluster import ParallelClusterProvider

    if kind == HYPERPOD_SLURM:
        return HyperPodProvider(session, orchestrator="slurm")
    if kind == HYPERPOD_EKS:
        return HyperPodProvider(session, orchestrator="eks")
    if kind == PARALLELCLUSTER:
        return ParallelClusterProvider(session)
    raise ValueError(f"Unknown cluster kind {kind!r}")


__all__ = [
    "HYPERPOD_EKS",
    "HYPERPOD_SLURM",
    "PARALLELCLUSTER",
    "AccountAccess",
    "CloudError",
    "CloudSession",
    "CloudStatus",
    "ClusterDescription",
    "ClusterSpec",
    "GroupRole",
    "GroupSpec",
    "NodeInfo",
    "PermanentCloudError",
    "ProviderUnavailable",
    "StorageKind",
    "StorageSpec",
    "TransientCloudError",
    "clear_session_cache",
    "get_provider",
    "session_for",
    "worst_case_seconds",
]
