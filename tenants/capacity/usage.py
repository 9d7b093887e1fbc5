"""What allocations are used for, as the capacity pages show it (running instance-hours and utilization in the
allocation tables, the pool timeline's running line, the review queue's recent utilization).

The figures come from usage accounting in workloads.usage, which registers its reader here when the app starts:
tenants never imports workloads (the same rule the allocation signals keep). Without a reader (tenants alone),
pages show no usage figures rather than failing.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Protocol


class UsageReader(Protocol):
    def allocation_use(self, allocations: list) -> dict[int, object]:
        """Per allocation id: an object with allocated/running/remaining hours, utilization, projected_share."""

    def org_utilization(self, organization_ids: set[int], *, first: date, last: date) -> dict[int, Decimal | None]:
        """Per organization id: running ÷ allocated over [first, last] (None when nothing was allocated)."""

    def pool_running(self, pool, *, first: date, last: date) -> dict[date, Decimal]:
        """Per day: the average number of the pool's instances running."""


class NoUsage:
    def allocation_use(self, allocations: list) -> dict[int, object]:
        return {}

    def org_utilization(self, organization_ids: set[int], *, first: date, last: date) -> dict[int, Decimal | None]:
        return {}

    def pool_running(self, pool, *, first: date, last: date) -> dict[date, Decimal]:
        return {}


_reader: UsageReader = NoUsage()


def register(reader: UsageReader) -> None:
    global _reader
    _reader = reader


def usage() -> UsageReader:
    return _reader
