"""Capacity writes: requests, decisions, allocations. Every rule that spans rows lives here.

The pool invariant — on every day, the allocations holding capacity in a pool sum to at most
total − spare — is enforced in `_check_fits` under a row lock on the pool, and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.translation import gettext as _

from portal.links import portal_url
from tenants.access import get_org_access_or_404, is_program_manager
from tenants.capacity import Peak, Span, peak_usage
from tenants.estimate import MAX_PARAMETERS, MAX_TOKENS, Estimate, Hardware, estimate
from tenants.models import (
    Allocation,
    AuditEvent,
    CapacityPool,
    CapacityRequest,
    InstancePrice,
    InstanceType,
    Organization,
    Program,
)
from tenants.signals import allocation_revoked

Status = CapacityRequest.Status


def today() -> date:
    """Today in the program's timezone (settings.TIME_ZONE, Asia/Tokyo)."""
    return timezone.localdate()


def record_audit(
    *, actor, organization: Organization, action: str, target, changes: dict | None = None, comment: str = ""
) -> AuditEvent:
    """Append one audit event; `changes` maps a field to [before, after]."""
    return AuditEvent.objects.create(
        actor=actor if actor is not None and actor.is_authenticated else None,
        organization=organization,
        action=action,
        target_type=target._meta.model_name,
        target_id=target.pk,
        changes={field: [_plain(a), _plain(b)] for field, (a, b) in (changes or {}).items()},
        comment=comment,
    )


def _plain(value):
    if isinstance(value, date | Decimal):
        return str(value)
    return value


# --- Reading pools -----------------------------------------------------------------------------


def find_pool(*, instance_type: InstanceType, region: str, starts_on: date, ends_on: date) -> CapacityPool:
    """The program pool that serves this type and region over the window, or a ValidationError saying why not."""
    if not InstancePrice.objects.filter(instance_type=instance_type, region=region).exists():
        raise ValidationError(
            {"region": _("%(type)s is not offered in %(region)s.") % {"type": instance_type, "region": region}}
        )
    pools = list(
        CapacityPool.objects.filter(instance_type=instance_type, region=region)
        .select_related("program", "instance_type")
        .order_by("-program__starts_on", "pk")
    )
    if not pools:
        raise ValidationError(
            {
                "instance_type": _("The program has no pool of %(type)s in %(region)s.")
                % {"type": instance_type, "region": region}
            }
        )
    for pool in pools:
        if pool.starts_on <= starts_on and ends_on <= pool.ends_on:
            return pool
    pool = pools[0]
    message = _("The %(pool)s pool is available from %(start)s to %(end)s; choose dates inside that window.") % {
        "pool": pool,
        "start": date_format(pool.starts_on, "Y-m-d"),
        "end": date_format(pool.ends_on, "Y-m-d"),
    }
    field = "starts_on" if starts_on < pool.starts_on or starts_on > pool.ends_on else "ends_on"
    raise ValidationError({field: message})


def pool_spans(pool_ids: list[int], *, starts_on: date, ends_on: date) -> dict[int, list[Span]]:
    """The allocations holding capacity in these pools over the window, in one query, keyed by pool."""
    spans: dict[int, list[Span]] = {pk: [] for pk in pool_ids}
    rows = (
        Allocation.objects.filter(pool_id__in=pool_ids)
        .holding_capacity()
        .overlapping(starts_on, ends_on)
        .values_list("pool_id", "starts_on", "ends_on", "instance_count", "organization_id")
    )
    for pool_id, start, end, count, org_id in rows:
        spans[pool_id].append(Span(start, end, count, org_id))
    return spans


@dataclass(frozen=True)
class Headroom:
    allocatable: int
    peak: Peak
    covers_window: bool = True  # False: part of the window lies outside the pool's own window

    @property
    def free(self) -> int:
        if not self.covers_window:
            return 0  # the pool has no capacity at all on the days it does not cover
        return max(self.allocatable - self.peak.used, 0)


def headroom(pool: CapacityPool, spans: list[Span], *, starts_on: date, ends_on: date) -> Headroom:
    covers = pool.starts_on <= starts_on and ends_on <= pool.ends_on
    return Headroom(pool.allocatable_instances, peak_usage(spans, starts_on=starts_on, ends_on=ends_on), covers)


def check_pool_change(*, pool: CapacityPool, total_instances: int, spare_instances: int, starts_on: date,
                      ends_on: date) -> None:  # fmt: skip
    """A pool may shrink only while its allocations still fit: the invariant holds for pool edits too."""
    if pool.pk is None:
        return
    holding = Allocation.objects.filter(pool=pool).holding_capacity()
    outside = holding.exclude(starts_on__gte=starts_on, ends_on__lte=ends_on).order_by("starts_on").first()
    if outside is not None:
        raise ValidationError(
            _("Allocation #%(id)s (%(start)s – %(end)s) lies outside the new window; revoke or move it first.")
            % {"id": outside.pk, "start": outside.starts_on, "end": outside.ends_on}
        )
    spans = [Span(a.starts_on, a.ends_on, a.instance_count) for a in holding]
    peak = peak_usage(spans, starts_on=starts_on, ends_on=ends_on)
    if peak.used > total_instances - spare_instances:
        raise ValidationError(
            _("On %(day)s, %(used)s instances are allocated: the pool needs at least %(used)s allocatable "
              "(total − spare), not %(allocatable)s.")
            % {"day": peak.on, "used": peak.used, "allocatable": total_instances - spare_instances}
        )  # fmt: skip


@transaction.atomic
def save_pool(*, pool: CapacityPool) -> CapacityPool:
    """Save a pool edit (admin) under the pool row lock, re-checking the invariant."""
    if pool.pk is not None:
        CapacityPool.objects.select_for_update().get(pk=pool.pk)
    check_pool_change(
        pool=pool,
        total_instances=pool.total_instances,
        spare_instances=pool.spare_instances,
        starts_on=pool.starts_on,
        ends_on=pool.ends_on,
    )
    pool.save()
    return pool


def catalog_prices() -> dict[tuple[int, str], Decimal]:
    """Every on-demand price, {(instance_type_id, region): usd_per_hour}, in one query."""
    rows = InstancePrice.objects.values_list("instance_type_id", "region", "usd_per_hour")
    return {(type_id, region): usd for type_id, region, usd in rows}


def request_estimate(capacity_request: CapacityRequest, *, prices: dict | None = None) -> Estimate | None:
    """The estimate for a request's training plan, or None when it states no parameter count.
    Pass `prices` (catalog_prices()) when estimating many requests."""
    if not capacity_request.parameter_count:
        return None
    pool = capacity_request.pool
    return estimate_for(
        instance_type=pool.instance_type,
        region=pool.region,
        program=pool.program,
        parameters=capacity_request.parameter_count,
        tokens=capacity_request.training_tokens,
        instance_count=capacity_request.instance_count,
        starts_on=capacity_request.starts_on,
        ends_on=capacity_request.ends_on,
        mfu=capacity_request.expected_mfu,
        prices=prices,
    )


def estimate_for(
    *,
    instance_type: InstanceType,
    region: str,
    program: Program | None,
    parameters: int,
    tokens: int | None,
    instance_count: int,
    starts_on: date,
    ends_on: date,
    mfu: Decimal | None,
    prices: dict | None = None,
) -> Estimate:
    """`prices` ({(type_id, region): usd}) lets a page price many estimates from one query."""
    if prices is None:
        usd = (
            InstancePrice.objects.filter(instance_type=instance_type, region=region)
            .values_list("usd_per_hour", flat=True)
            .first()
        )
    else:
        usd = prices.get((instance_type.pk, region))
    hardware = Hardware(
        api_name=instance_type.api_name,
        accelerators_per_instance=instance_type.accelerators_per_instance,
        accelerator_memory_gib=instance_type.accelerator_memory_gib,
        peak_bf16_tflops=instance_type.peak_bf16_tflops,
        usd_per_hour=usd,
    )
    return estimate(
        parameters=parameters,
        tokens=tokens,
        hardware=hardware,
        instance_count=instance_count,
        starts_on=starts_on,
        ends_on=ends_on,
        mfu=mfu,
        exchange_rate=program.usd_exchange_rate if program else Decimal("1"),
    )


# --- Tenant actions ----------------------------------------------------------------------------


def _validate_window(*, starts_on: date, ends_on: date) -> None:
    if ends_on < starts_on:
        raise ValidationError({"ends_on": _("The last day must not be before the first day.")})
    if starts_on < today():
        raise ValidationError({"starts_on": _("The first day cannot be in the past.")})


@dataclass(frozen=True)
class Plan:
    """What a tenant asks for, from the request form or the API; type and region resolve to a pool."""

    instance_type: InstanceType
    region: str
    instance_count: int
    starts_on: date
    ends_on: date
    justification: str
    parameter_count: int | None = None
    training_tokens: int | None = None
    framework: str = ""
    expected_mfu: Decimal | None = None
    kind: str | None = None  # None: "new" for a new request, unchanged for an edited draft

    @classmethod
    def from_data(cls, data: dict, *, base: Allocation | None, default_kind: str | None = None) -> Plan:
        """From a form's or serializer's validated data; a change of an allocation takes its type and region."""
        return cls(
            instance_type=base.pool.instance_type if base else data["instance_type"],
            region=base.pool.region if base else data["region"],
            instance_count=data["instance_count"],
            starts_on=data["starts_on"],
            ends_on=data["ends_on"],
            justification=data["justification"],
            parameter_count=data.get("parameter_count"),
            training_tokens=data.get("training_tokens"),
            framework=data.get("framework", ""),
            expected_mfu=data.get("expected_mfu"),
            kind=data.get("kind") or default_kind,
        )

    def field_values(self, *, pool: CapacityPool, kind: str) -> dict:
        """The request's PLAN_FIELDS as this plan sets them."""
        return {
            "kind": kind, "pool": pool, "instance_count": self.instance_count, "starts_on": self.starts_on,
            "ends_on": self.ends_on, "justification": self.justification.strip(),
            "parameter_count": self.parameter_count, "training_tokens": self.training_tokens,
            "framework": self.framework,
            "expected_mfu": None if self.expected_mfu is None else Decimal(self.expected_mfu),
        }  # fmt: skip


# The fields a tenant writes; a draft's edit may change any of them (type and region through `pool`).
PLAN_FIELDS = (
    "kind", "pool", "instance_count", "starts_on", "ends_on", "justification", "parameter_count", "training_tokens",
    "framework", "expected_mfu",
)  # fmt: skip


@transaction.atomic
def create_request(
    *,
    user,
    organization: Organization,
    plan: Plan,
    base_allocation: Allocation | None = None,
    submit: bool = False,
) -> CapacityRequest:
    _require_member(user, organization)
    kind = plan.kind or CapacityRequest.Kind.NEW
    pool = _checked_plan(organization=organization, plan=plan, base_allocation=base_allocation, kind=kind)
    capacity_request = CapacityRequest.objects.create(
        organization=organization,
        base_allocation=base_allocation,
        created_by=user,
        **plan.field_values(pool=pool, kind=kind),
    )
    record_audit(
        actor=user,
        organization=organization,
        action="request.created",
        target=capacity_request,
        changes={
            "instance_count": (None, plan.instance_count),
            "pool": (None, str(pool)),
            "starts_on": (None, plan.starts_on),
            "ends_on": (None, plan.ends_on),
        },
    )
    if submit:
        capacity_request = submit_request(user=user, capacity_request=capacity_request)
    return capacity_request


@transaction.atomic
def edit_draft(*, user, capacity_request: CapacityRequest, plan: Plan, submit: bool = False) -> CapacityRequest:
    """Rewrite a draft's plan (the same checks as a new request), recording each changed field; optionally
    submit it in the same step. A submitted request is frozen: withdraw it and ask again."""
    _require_writer(user, capacity_request)
    capacity_request = _locked(capacity_request)
    if capacity_request.status != Status.DRAFT:
        raise ValidationError(
            _("Only a draft can be edited; this request is %(status)s.")
            % {"status": capacity_request.get_status_display().lower()}
        )
    base = capacity_request.base_allocation
    kind = plan.kind or capacity_request.kind
    pool = _checked_plan(organization=capacity_request.organization, plan=plan, base_allocation=base, kind=kind)
    wanted = plan.field_values(pool=pool, kind=kind)
    changes = {}
    for field in PLAN_FIELDS:
        before = getattr(capacity_request, field)
        if before != wanted[field]:
            display = str if field == "pool" else _plain
            changes[field] = (display(before), display(wanted[field]))
            setattr(capacity_request, field, wanted[field])
    if changes:
        capacity_request.save(update_fields=[f for f in PLAN_FIELDS if f in changes])
        record_audit(
            actor=user,
            organization=capacity_request.organization,
            action="request.edited",
            target=capacity_request,
            changes=changes,
        )
    if submit:
        capacity_request = submit_request(user=user, capacity_request=capacity_request)
    return capacity_request


def _checked_plan(
    *, organization: Organization, plan: Plan, base_allocation: Allocation | None, kind: str
) -> CapacityPool:
    """Every rule a request's plan must meet, new or edited; returns the pool that would serve it. A change
    of an allocation takes its type and region from the allocation, whatever the plan says."""
    if plan.instance_count is None or plan.instance_count < 1:
        raise ValidationError({"instance_count": _("Ask for at least one instance.")})
    if not plan.justification.strip():
        raise ValidationError({"justification": _("Say what the capacity is for.")})
    starts_on, ends_on = plan.starts_on, plan.ends_on
    _validate_window(starts_on=starts_on, ends_on=ends_on)
    instance_type, region = plan.instance_type, plan.region
    if base_allocation is not None:
        _check_change_of(base_allocation, organization=organization, kind=kind, starts_on=starts_on, ends_on=ends_on)
        instance_type, region = base_allocation.pool.instance_type, base_allocation.pool.region
    elif kind != CapacityRequest.Kind.NEW:
        raise ValidationError({"base_allocation": _("Choose the allocation to extend or enlarge.")})
    pool = find_pool(instance_type=instance_type, region=region, starts_on=starts_on, ends_on=ends_on)
    if plan.instance_count > pool.allocatable_instances:
        raise ValidationError(
            {
                "instance_count": _("The %(pool)s pool has %(n)s allocatable instances in all.")
                % {"pool": pool, "n": pool.allocatable_instances}
            }
        )
    if plan.parameter_count is not None and not 0 < plan.parameter_count <= MAX_PARAMETERS:
        raise ValidationError(
            {"parameter_count": _("The parameter count must be between 1 and %(max)s.") % {"max": MAX_PARAMETERS}}
        )
    if plan.training_tokens is not None and not 0 < plan.training_tokens <= MAX_TOKENS:
        raise ValidationError(
            {"training_tokens": _("The token count must be between 1 and %(max)s.") % {"max": MAX_TOKENS}}
        )
    if plan.expected_mfu is not None and not Decimal("0") < Decimal(plan.expected_mfu) <= Decimal("1"):
        raise ValidationError({"expected_mfu": _("Model FLOPs utilization is a fraction between 0 and 1.")})
    return pool


def _check_change_of(base: Allocation, *, organization: Organization, kind: str, starts_on: date,
                     ends_on: date) -> None:  # fmt: skip
    """An extension continues an allocation the day after it ends; an enlargement adds instances inside it."""
    if base.organization_id != organization.pk:
        raise ValidationError({"base_allocation": _("Choose one of this organization's current allocations.")})
    if base.status not in (Allocation.Status.SCHEDULED, Allocation.Status.ACTIVE):
        raise ValidationError(
            {"base_allocation": _("Only a scheduled or active allocation can be extended or enlarged.")}
        )
    if kind == CapacityRequest.Kind.EXTENSION and starts_on != base.ends_on + timedelta(days=1):
        raise ValidationError(
            {"starts_on": _("An extension starts the day after the allocation ends: %(day)s.")
             % {"day": date_format(base.ends_on + timedelta(days=1), "Y-m-d")}}
        )  # fmt: skip
    if kind == CapacityRequest.Kind.ENLARGEMENT and not (base.starts_on <= starts_on and ends_on <= base.ends_on):
        raise ValidationError(
            {"starts_on": _("An enlargement adds instances inside the allocation's window (%(start)s – %(end)s).")
             % {"start": date_format(base.starts_on, "Y-m-d"), "end": date_format(base.ends_on, "Y-m-d")}}
        )  # fmt: skip
    if kind == CapacityRequest.Kind.NEW:
        raise ValidationError({"kind": _("Say whether to extend or to enlarge the allocation.")})


def _locked(capacity_request: CapacityRequest) -> CapacityRequest:
    # Re-read under a row lock: two clicks (or two managers) must not both act on the old status.
    # of=("self",): lock only the request row, not the joined pool/catalog rows (approve locks the pool itself).
    return (
        CapacityRequest.objects.select_for_update(of=("self",))
        .select_related("pool__instance_type", "pool__program", "organization")
        .get(pk=capacity_request.pk)
    )


def require_member(access) -> None:
    """Capacity is asked for by the organization's own members; program staff decide, they do not ask."""
    if access.membership is None:
        raise PermissionDenied(_("Only members of %(org)s can request capacity for it.") % {"org": access.organization})


def _require_member(user, organization: Organization) -> None:
    require_member(get_org_access_or_404(user, organization.slug))


def _require_writer(user, capacity_request: CapacityRequest) -> None:
    _require_member(user, capacity_request.organization)


def _set_status(*, user, capacity_request: CapacityRequest, status: str, action: str, comment: str = "") -> None:
    before = capacity_request.status
    capacity_request.status = status
    record_audit(
        actor=user,
        organization=capacity_request.organization,
        action=action,
        target=capacity_request,
        changes={"status": (before, status)},
        comment=comment,
    )


@transaction.atomic
def submit_request(*, user, capacity_request: CapacityRequest) -> CapacityRequest:
    _require_writer(user, capacity_request)
    capacity_request = _locked(capacity_request)
    if capacity_request.status != Status.DRAFT:
        raise ValidationError(
            _("Only a draft can be submitted; this request is %(status)s.")
            % {"status": capacity_request.get_status_display().lower()}
        )
    _validate_window(starts_on=capacity_request.starts_on, ends_on=capacity_request.ends_on)
    _set_status(user=user, capacity_request=capacity_request, status=Status.SUBMITTED, action="request.submitted")
    capacity_request.submitted_at = timezone.now()
    capacity_request.save(update_fields=["status", "submitted_at"])
    return capacity_request


@transaction.atomic
def withdraw_request(*, user, capacity_request: CapacityRequest, comment: str = "") -> CapacityRequest:
    _require_writer(user, capacity_request)
    capacity_request = _locked(capacity_request)
    if not capacity_request.is_open:
        raise ValidationError(
            _("Only a draft or a submitted request can be withdrawn; this one is %(status)s.")
            % {"status": capacity_request.get_status_display().lower()}
        )
    _set_status(
        user=user,
        capacity_request=capacity_request,
        status=Status.WITHDRAWN,
        action="request.withdrawn",
        comment=comment,
    )
    capacity_request.save(update_fields=["status"])
    return capacity_request


# --- Program manager decisions -----------------------------------------------------------------


def _require_manager(user) -> None:
    if not is_program_manager(user):
        raise PermissionDenied(_("Only a program manager can decide on capacity."))


def _require_submitted(capacity_request: CapacityRequest) -> None:
    if capacity_request.status != Status.SUBMITTED:
        raise ValidationError(
            _("Only a submitted request can be decided; this one is %(status)s.")
            % {"status": capacity_request.get_status_display().lower()}
        )


def _check_fits(*, pool: CapacityPool, instance_count: int, starts_on: date, ends_on: date) -> None:
    """The invariant. Call with the pool row locked (select_for_update) in the same transaction."""
    spans = pool_spans([pool.pk], starts_on=starts_on, ends_on=ends_on)[pool.pk]
    room = headroom(pool, spans, starts_on=starts_on, ends_on=ends_on)
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
    capacity_request = _locked(capacity_request)
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
    if start < capacity_request.starts_on or end > capacity_request.ends_on:
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
    _set_status(
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
    _notify_decision(capacity_request, allocation)
    return allocation


@transaction.atomic
def reject_request(*, user, capacity_request: CapacityRequest, comment: str) -> CapacityRequest:
    _require_manager(user)
    if not comment.strip():
        raise ValidationError({"comment": _("Tell the tenant why the request is rejected.")})
    capacity_request = _locked(capacity_request)
    _require_submitted(capacity_request)
    _set_status(
        user=user, capacity_request=capacity_request, status=Status.REJECTED, action="request.rejected", comment=comment
    )
    capacity_request.decided_by, capacity_request.decided_at = user, timezone.now()
    capacity_request.decision_comment = comment.strip()
    capacity_request.save(update_fields=["status", "decided_by", "decided_at", "decision_comment"])
    _notify_decision(capacity_request, None)
    return capacity_request


@transaction.atomic
def revoke_allocation(*, user, allocation: Allocation, reason: str) -> Allocation:
    _require_manager(user)
    if not reason.strip():
        raise ValidationError({"reason": _("Give the reason for revoking; the tenant will read it.")})
    allocation = Allocation.objects.select_for_update().select_related("organization", "pool").get(pk=allocation.pk)
    if allocation.status in (Allocation.Status.REVOKED, Allocation.Status.EXPIRED):
        raise ValidationError(
            _("This allocation is already %(status)s.") % {"status": allocation.get_status_display().lower()}
        )
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
    _notify(
        allocation.organization,
        _("Allocation revoked: %(allocation)s") % {"allocation": allocation},
        "\n\n".join(
            [
                _("A program manager revoked this allocation; its clusters are being deleted."),
                _("Reason: %(reason)s") % {"reason": allocation.revoke_reason},
                _("Your capacity in the portal: %(url)s")
                % {"url": portal_url("capacity", allocation.organization.slug)},
            ]
        ),
    )
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


# --- Notifications -----------------------------------------------------------------------------


def _notify(organization: Organization, subject: str, body: str) -> None:
    recipients = sorted(
        {email for email in organization.memberships.values_list("user__email", flat=True) if email}
        | ({organization.contact_email} if organization.contact_email else set())
    )
    if recipients:
        # Sent only once the decision is committed; a rolled-back approval mails nobody.
        transaction.on_commit(
            lambda: send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, recipients, fail_silently=True)
        )


def _notify_decision(capacity_request: CapacityRequest, allocation: Allocation | None) -> None:
    status = capacity_request.get_status_display()
    lines = [
        _("Your capacity request #%(id)s (%(count)s × %(pool)s, %(start)s – %(end)s) was %(status)s.")
        % {
            "id": capacity_request.pk,
            "count": capacity_request.instance_count,
            "pool": capacity_request.pool,
            "start": capacity_request.starts_on,
            "end": capacity_request.ends_on,
            "status": status.lower(),
        }
    ]
    if allocation is not None:
        lines.append(
            _("Allocated: %(count)s instances from %(start)s to %(end)s.")
            % {"count": allocation.instance_count, "start": allocation.starts_on, "end": allocation.ends_on}
        )
    if capacity_request.decision_comment:
        lines.append(_("Comment: %(comment)s") % {"comment": capacity_request.decision_comment})
    lines.append(
        _("Open the request in the portal: %(url)s")
        % {"url": portal_url("capacity-request", capacity_request.organization.slug, capacity_request.pk)}
    )
    _notify(
        capacity_request.organization,
        _("Capacity request #%(id)s: %(status)s") % {"id": capacity_request.pk, "status": status},
        "\n\n".join(lines),
    )
