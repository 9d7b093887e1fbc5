"""What usage accounting does when the tenant core changes an allocation. Signals, not calls: granting and
revoking live in tenants, which must never import workloads."""

from __future__ import annotations

from django.utils import timezone

from workloads.usage.rollups import mark_days


def on_allocation_granted(*, allocation, **signal) -> None:
    mark_days(allocation.organization_id, allocation.starts_on, allocation.ends_on)


def on_allocation_revoked(*, allocation, **signal) -> None:
    revoked_on = timezone.localdate(allocation.revoked_at) if allocation.revoked_at else allocation.starts_on
    mark_days(allocation.organization_id, max(revoked_on, allocation.starts_on), allocation.ends_on)
