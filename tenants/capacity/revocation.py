"""What revoking an allocation takes with it: the clusters it deletes, named on the revoke page before a manager
confirms and in the email the organization gets after. Clusters live in workloads, which registers its finder here
when the app starts (tenants never imports workloads, the rule the allocation signals keep); without it, there is
nothing to name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class DoomedCluster:
    name: str
    status: str  # its status as the reader reads it
    url: str  # its page, site-relative


def _none(allocation) -> list[DoomedCluster]:
    return []


_finder: Callable[[object], list[DoomedCluster]] = _none


def register(finder: Callable[[object], list[DoomedCluster]]) -> None:
    global _finder
    _finder = finder


def clusters_to_delete(allocation) -> list[DoomedCluster]:
    """The clusters revoking `allocation` would delete now (the same rule as the revocation itself)."""
    return _finder(allocation)
