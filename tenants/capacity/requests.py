"""A tenant's capacity requests: the plan it asks for, drafts it edits, submitting and withdrawing.

Every rule a request must meet is checked here; deciding on it is tenants.capacity.decisions.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.translation import gettext as _

from portal.periods import today
from tenants.access import get_org_access_or_404
from tenants.audit import plain, record_audit
from tenants.capacity.estimate import MAX_PARAMETERS, MAX_TOKENS
from tenants.capacity.pools import find_pool
from tenants.cycle import program_cycle
from tenants.models import Allocation, CapacityPool, CapacityRequest, InstanceType, Organization

Status = CapacityRequest.Status


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
    start_slack_days: int = 0

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
            start_slack_days=data.get("start_slack_days") or 0,
        )

    def field_values(self, *, pool: CapacityPool, kind: str) -> dict:
        """The request's PLAN_FIELDS as this plan sets them."""
        return {
            "kind": kind, "pool": pool, "instance_count": self.instance_count, "starts_on": self.starts_on,
            "ends_on": self.ends_on, "justification": self.justification.strip(),
            "parameter_count": self.parameter_count, "training_tokens": self.training_tokens,
            "framework": self.framework,
            "expected_mfu": None if self.expected_mfu is None else Decimal(self.expected_mfu),
            "start_slack_days": self.start_slack_days,
        }  # fmt: skip


# The fields a tenant writes; a draft's edit may change any of them (type and region through `pool`).
PLAN_FIELDS = (
    "kind", "pool", "instance_count", "starts_on", "ends_on", "justification", "parameter_count", "training_tokens",
    "framework", "expected_mfu", "start_slack_days",
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
    capacity_request = locked_request(capacity_request)
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
            display = str if field == "pool" else plain
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
    _check_slack(plan, pool=pool)
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


def _check_slack(plan: Plan, *, pool: CapacityPool) -> None:
    """A window moved by its whole slack still lies in the program's cycle and the pool's window."""
    slack = plan.start_slack_days or 0
    if slack < 0:
        raise ValidationError({"start_slack_days": _("The slack is a number of days, 0 or more.")})
    if not slack:
        return
    cycle = program_cycle()
    try:
        latest_end = plan.ends_on + timedelta(days=slack)
    except OverflowError:
        latest_end = date.max
    if latest_end not in cycle or latest_end > pool.ends_on:
        raise ValidationError(
            {
                "start_slack_days": _(
                    "Moved %(slack)s days later, the window would end on %(end)s, after the %(pool)s pool and the "
                    "program end (%(last)s)."
                )
                % {
                    "slack": slack,
                    "end": date_format(latest_end, "Y-m-d") if latest_end != date.max else "—",
                    "pool": pool,
                    "last": date_format(min(pool.ends_on, cycle.last), "Y-m-d"),
                }
            }
        )


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


def locked_request(capacity_request: CapacityRequest) -> CapacityRequest:
    # Re-read under a row lock: two clicks (or two managers) must not both act on the old status.
    # of=("self",): lock only the request row, not the joined pool/catalog rows (approve locks the pool itself).
    return (
        CapacityRequest.objects.select_for_update(of=("self",))
        .select_related("pool__instance_type", "pool__program", "organization")
        .get(pk=capacity_request.pk)
    )


def require_member(access) -> None:
    """Capacity is asked for by the organization's own members; program staff decide, they do not ask."""
    access.require(
        access.can_request_capacity,
        _("Only members of %(org)s can request capacity for it.") % {"org": access.organization},
    )


def _require_member(user, organization: Organization) -> None:
    require_member(get_org_access_or_404(user, organization.slug))


def _require_writer(user, capacity_request: CapacityRequest) -> None:
    _require_member(user, capacity_request.organization)


def set_request_status(*, user, capacity_request: CapacityRequest, status: str, action: str, comment: str = "") -> None:
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
    capacity_request = locked_request(capacity_request)
    if capacity_request.status != Status.DRAFT:
        raise ValidationError(
            _("Only a draft can be submitted; this request is %(status)s.")
            % {"status": capacity_request.get_status_display().lower()}
        )
    _validate_window(starts_on=capacity_request.starts_on, ends_on=capacity_request.ends_on)
    set_request_status(
        user=user, capacity_request=capacity_request, status=Status.SUBMITTED, action="request.submitted"
    )
    capacity_request.submitted_at = timezone.now()
    capacity_request.save(update_fields=["status", "submitted_at"])
    return capacity_request


@transaction.atomic
def withdraw_request(*, user, capacity_request: CapacityRequest, comment: str = "") -> CapacityRequest:
    _require_writer(user, capacity_request)
    capacity_request = locked_request(capacity_request)
    if not capacity_request.is_open:
        raise ValidationError(
            _("Only a draft or a submitted request can be withdrawn; this one is %(status)s.")
            % {"status": capacity_request.get_status_display().lower()}
        )
    set_request_status(
        user=user,
        capacity_request=capacity_request,
        status=Status.WITHDRAWN,
        action="request.withdrawn",
        comment=comment,
    )
    capacity_request.save(update_fields=["status"])
    return capacity_request
