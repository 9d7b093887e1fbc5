"""Program managers' decisions on submitted requests: approve (in full or trimmed) or reject.

The pool invariant — on every day, the allocations holding capacity in a pool sum to at most total − spare —
is enforced in `_check_fits` under a row lock on the pool, and nowhere else.
"""

from __future__ import annotations

from datetime import date, timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.translation import gettext as _

from portal.periods import today
from tenants.access import require_program_manager
from tenants.audit import record_audit
from tenants.capacity.notifications import notify_decision
from tenants.capacity.pools import headroom
from tenants.capacity.requests import locked_request, set_request_status
from tenants.models import Allocation, CapacityPool, CapacityRequest
from tenants.signals import allocation_granted

Status = CapacityRequest.Status


def _require_manager(user) -> None:
    require_program_manager(user, _("Only a program manager can decide on capacity."))


def _require_submitted(capacity_request: CapacityRequest) -> None:
    if capacity_request.status != Status.SUBMITTED:
        raise ValidationError(
            _("Only a submitted request can be decided; this one is %(status)s.")
            % {"status": capacity_request.get_status_display().lower()}
        )


def _check_fits(*, pool: CapacityPool, instance_count: int, starts_on: date, ends_on: date) -> None:
    """The invariant. Call with the pool row locked (select_for_update) in the same transaction."""
    room = headroom(pool, starts_on=starts_on, ends_on=ends_on)
    if instance_count > room.free:
        raise ValidationError(
            {
                "instance_count": _(
                    "This would overcommit the %(pool)s pool on %(day)s: %(used)s of its %(allocatable)s "
                    "allocatable instances are already allocated that day (free: %(free)s, "
                    "short by %(short)s)."
                )
                % {
                    "pool": pool,
                    "day": date_format(room.peak.on, "Y-m-d"),
                    "used": room.peak.used,
                    "allocatable": room.allocatable,
                    "free": room.free,
                    "short": instance_count - room.free,
                }
            }
        )


@transaction.atomic
def approve_request(
    *,
    user,
    capacity_request: CapacityRequest,
    instance_count: int | None = None,
    starts_on: date | None = None,
    ends_on: date | None = None,
    comment: str = "",
) -> Allocation:
    """Approve in full, or partially (fewer instances and/or a shorter window). Creates the allocation."""
    _require_manager(user)
    # Lock order everywhere: pool, then request. The pool lock serializes every approval in the pool.
    pool = CapacityPool.objects.select_for_update().select_related("instance_type").get(pk=capacity_request.pool_id)
    capacity_request = locked_request(capacity_request)
    _require_submitted(capacity_request)
    count = capacity_request.instance_count if instance_count is None else instance_count
    start = starts_on or capacity_request.starts_on
    end = ends_on or capacity_request.ends_on
    if count < 1:
        raise ValidationError({"instance_count": _("Approve at least one instance, or reject the request.")})
    if count > capacity_request.instance_count:
        raise ValidationError(
            {
                "instance_count": _("You cannot approve more than the %(n)s instances requested.")
                % {"n": capacity_request.instance_count}
            }
        )
    if end < start:
        raise ValidationError({"ends_on": _("The last day must not be before the first day.")})
    slack = timedelta(days=capacity_request.start_slack_days)
    if (
        start < capacity_request.starts_on
        or end > capacity_request.ends_on + slack
        or (end - start > capacity_request.ends_on - capacity_request.starts_on)
    ):
        if slack:
            window = _(
                "An approval can shorten the requested window (%(start)s – %(end)s) or move it up to %(slack)s "
                "days later, not widen it."
            ) % {
                "start": date_format(capacity_request.starts_on, "Y-m-d"),
                "end": date_format(capacity_request.ends_on, "Y-m-d"),
                "slack": capacity_request.start_slack_days,
            }
        else:
            window = _("An approval can shorten the requested window (%(start)s – %(end)s), not widen it.") % {
                "start": date_format(capacity_request.starts_on, "Y-m-d"),
                "end": date_format(capacity_request.ends_on, "Y-m-d"),
            }
        raise ValidationError({"starts_on" if start < capacity_request.starts_on else "ends_on": window})
    if end < today():
        raise ValidationError(
            {"ends_on": _("The requested window has passed; reject the request or agree new dates with the tenant.")}
        )
    # Capacity cannot be granted for days already gone: a late approval starts today.
    start = max(start, today())
    _check_fits(pool=pool, instance_count=count, starts_on=start, ends_on=end)

    # A grant moved within the slack, or trimmed, is a partial approval: the tenant gets other than it asked.
    partial = (count, start, end) != (
        capacity_request.instance_count,
        capacity_request.starts_on,
        capacity_request.ends_on,
    )
    allocation = Allocation.objects.create(
        organization=capacity_request.organization,
        pool=pool,
        request=capacity_request,
        instance_count=count,
        starts_on=start,
        ends_on=end,
        status=Allocation.Status.ACTIVE if start <= today() else Allocation.Status.SCHEDULED,
    )
    allocation_granted.send(sender=Allocation, allocation=allocation)
    set_request_status(
        user=user,
        capacity_request=capacity_request,
        status=Status.PARTIALLY_APPROVED if partial else Status.APPROVED,
        action="request.partially_approved" if partial else "request.approved",
        comment=comment,
    )
    capacity_request.decided_by, capacity_request.decided_at = user, timezone.now()
    capacity_request.decision_comment = comment
    capacity_request.save(update_fields=["status", "decided_by", "decided_at", "decision_comment"])
    record_audit(
        actor=user,
        organization=capacity_request.organization,
        action="allocation.created",
        target=allocation,
        changes={"instance_count": (None, count), "starts_on": (None, start), "ends_on": (None, end)},
        comment=comment,
    )
    notify_decision(capacity_request, allocation)
    return allocation


@transaction.atomic
def reject_request(*, user, capacity_request: CapacityRequest, comment: str) -> CapacityRequest:
    _require_manager(user)
    if not comment.strip():
        raise ValidationError({"comment": _("Tell the tenant why the request is rejected.")})
    capacity_request = locked_request(capacity_request)
    _require_submitted(capacity_request)
    set_request_status(
        user=user, capacity_request=capacity_request, status=Status.REJECTED, action="request.rejected", comment=comment
    )
    capacity_request.decided_by, capacity_request.decided_at = user, timezone.now()
    capacity_request.decision_comment = comment.strip()
    capacity_request.save(update_fields=["status", "decided_by", "decided_at", "decision_comment"])
    notify_decision(capacity_request, None)
    return capacity_request
