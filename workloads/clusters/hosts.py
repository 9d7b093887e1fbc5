"""Which node a host name means. The cloud names a node by its instance id and private host name; Slurm by its
node name (on HyperPod the host name, on ParallelCluster a name the reporter maps to a host); the GPU exporter by
its Hostname label, Prometheus by the scrape target's address and port. All meet at one key per host.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

from workloads.clusters.models import ClusterNode

_IPV4 = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")


def host_key(name: str) -> str:
    """One spelling per host: lower case, without port or domain; an EC2 private address a.b.c.d and its default
    host name ip-a-b-c-d (ip-a-b-c-d.ec2.internal, …) are the same key. "" for an empty name."""
    name = name.strip().lower()
    if name.startswith("[") and "]" in name:  # [v6 address]:port
        return name[1 : name.index("]")]
    if name.count(":") == 1:  # host:port (a bare IPv6 address has several colons)
        name = name.rsplit(":", 1)[0]
    if _IPV4.fullmatch(name):
        return "ip-" + name.replace(".", "-")
    return name.split(".", 1)[0]


def node_keys(node: ClusterNode) -> set[str]:
    return {key for key in (host_key(node.instance_id), host_key(node.hostname)) if key}


class HostIndex:
    """The nodes of some clusters by host key. A private address can come back on a node that replaced a gone
    one, so a key may name several nodes over time: `live()` is the one listed now, `nodes()` all of them."""

    def __init__(self, nodes: Iterable[ClusterNode], slurm_names: dict[int, dict[str, str]] | None = None) -> None:
        self._nodes: dict[tuple[int, str], list[ClusterNode]] = defaultdict(list)
        self._slurm = slurm_names or {}
        for node in nodes:
            for key in node_keys(node):
                self._nodes[(node.cluster_id, key)].append(node)
        self._live_clusters: dict[str, set[int]] = defaultdict(set)
        for (cluster_id, key), candidates in self._nodes.items():
            candidates.sort(key=lambda n: (n.gone_at is None, n.gone_at or n.first_seen_at))
            if candidates[-1].gone_at is None:
                self._live_clusters[key].add(cluster_id)

    def key(self, cluster_id: int, name: str, *, mapped: bool = True) -> str:
        """The host key of a name as the cluster reports it: a Slurm node name goes through the reporter's map
        (`mapped=False`: the name is a host already, e.g. one resolved when its job was reported)."""
        return host_key(self._slurm.get(cluster_id, {}).get(name, name) if mapped else name)

    def nodes(self, cluster_id: int, name: str, *, mapped: bool = True) -> list[ClusterNode]:
        """Every node that ever had this host name in the cluster, the live one last."""
        return self._nodes.get((cluster_id, self.key(cluster_id, name, mapped=mapped)), [])

    def live(self, cluster_id: int, name: str) -> ClusterNode | None:
        nodes = self.nodes(cluster_id, name)
        return nodes[-1] if nodes and nodes[-1].gone_at is None else None

    def clusters_with(self, name: str) -> list[int]:
        """Clusters having a live node of this host name (a program-wide source must tell them apart)."""
        return sorted(self._live_clusters.get(host_key(name), ()))
