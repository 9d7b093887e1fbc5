"""One cluster's nodes as a poll saw them: what the node sync (workloads.clusters.sync) hands to the health events
and the run intervals, a layer below all three."""

from __future__ import annotations

from dataclasses import dataclass, field

from portal.cloud import NodeInfo
from workloads.clusters.models import Cluster, ClusterNode


@dataclass
class Listing:
    """`seen`: each listed node with what the cloud said of it; `gone`: the nodes no longer listed;
    `group_targets`: each group's target count."""

    cluster: Cluster
    seen: list[tuple[ClusterNode, NodeInfo]] = field(default_factory=list)
    gone: list[ClusterNode] = field(default_factory=list)
    group_targets: dict[str, int] = field(default_factory=dict)
