"""Allocations after they are granted: revoking one, and the daily scheduled → active → expired moves."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from portal.periods import today
from tenants.access import require_program_manager
from tenants.audit import record_audit
from tenants.capacity.notifications import notify_revocation
from tenants.capacity.revocation import clusters_to_delete
from tenants.capacity.usage import usage
from tenants.models import Allocation, CapacityPool
from tenants.signals import allocation_revoked


@transaction.atomic
def revoke_allocation(*, user, allocation: Allocation, reason: str) -> Allocation:
    require_program_manager(user, _("Only a program manager can decide on capacity."))
    if not reason.strip():
        raise ValidationError({"reason": _("Give the reason for revoking; the tenant will read it.")})
    # Lock order everywhere: pool, then allocation. The pool lock serializes the pool's ledger writers.
    CapacityPool.objects.select_for_update().only("pk").get(pk=allocation.pool_id)
    allocation = Allocation.objects.select_for_update().select_related("organization", "pool").get(pk=allocation.pk)
    if allocation.status in (Allocation.Status.REVOKED, Allocation.Status.EXPIRED):
        raise ValidationError(
            _("This allocation is already %(status)s.") % {"status": allocation.get_status_display().lower()}
        )
    doomed = clusters_to_delete(allocation)  # named in the email; the signal's receiver deletes the same ones
    before = allocation.status
    allocation.status = Allocation.Status.REVOKED
    allocation.revoked_by, allocation.revoked_at, allocation.revoke_reason = user, timezone.now(), reason.strip()
    allocation.save(update_fields=["status", "revoked_by", "revoked_at", "revoke_reason"])
    record_audit(
        actor=user,
        organization=allocation.organization,
        action="allocation.revoked",
        target=allocation,
        changes={"status": (before, Allocation.Status.REVOKED)},
        comment=reason.strip(),
    )
    allocation_revoked.send(sender=Allocation, allocation=allocation, user=user)
    notify_revocation(allocation, doomed)
    return allocation


def refresh_allocation_statuses(*, on: date | None = None) -> int:
    """Move allocations scheduled → active → expired as days pass. Idempotent; returns rows changed."""
    day = on or today()
    changed = 0
    transitions = [
        (Allocation.objects.filter(status=Allocation.Status.SCHEDULED, starts_on__lte=day, ends_on__gte=day),
         Allocation.Status.ACTIVE),
        (Allocation.objects.filter(status__in=[Allocation.Status.SCHEDULED, Allocation.Status.ACTIVE],
                                   ends_on__lt=day),
         Allocation.Status.EXPIRED),
    ]  # fmt: skip
    for queryset, status in transitions:
        for allocation in queryset.select_related("organization"):
            with transaction.atomic():
                # Compare-and-set: a concurrent revoke wins, and a rerun changes nothing.
                if Allocation.objects.filter(pk=allocation.pk, status=allocation.status).update(status=status):
                    record_audit(
                        actor=None,
                        organization=allocation.organization,
                        action=f"allocation.{status}",
                        target=allocation,
                        changes={"status": (allocation.status, status)},
                    )
                    changed += 1
    return changed


def allocation_rows(allocations, *, on: date) -> list[dict]:
    """Per allocation, each figure labelled by what it covers: instance-hours granted over the whole window; ran
    and utilization to date (ran ÷ allocated so far, from usage accounting); the share of the grant used so far;
    remaining = granted − ran (nothing once revoked or ended); and, while it runs, the share of the grant used by
    its last day at the last 7 days' rate (the burn-down projection of the organization's usage page)."""
    allocations = list(allocations)
    uses = usage().allocation_use(allocations)
    rows = []
    for allocation in allocations:
        use = uses.get(allocation.pk)
        granted = allocation.instance_hours
        running = use.running_hours if use else None
        ended = allocation.status in (Allocation.Status.REVOKED, Allocation.Status.EXPIRED) or allocation.ends_on < on
        remaining = 0 if ended else max(Decimal(granted) - (running or 0), Decimal(0))
        utilization = use.utilization if use else None
        share = running / granted if running is not None and granted else None
        projected = use.projected_share if use is not None and use.remaining and not ended else None
        rows.append(
            {
                "allocation": allocation,
                "granted": granted,
                "running": running,
                "utilization": utilization,
                "percent_used": min(round(100 * utilization), 100) if utilization is not None else 0,
                "share_of_grant": share,
                "remaining": remaining,
                "projected_share": projected,
                "projected_percent": min(round(100 * projected), 100) if projected is not None else 0,
                "ended": ended,
            }
        )
    return rows
