"""Writes to workload records. Views, serializers and commands parse input and call one function here; each
checks who may write through tenants.access, validates, writes under a row lock and records the history
(one WorkloadChange per changed field) itself — never a signal.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from tenants.access import OrgAccess, get_org_access_or_404
from tenants.models import Organization
from workloads.records.models import Workload, WorkloadChange

# The fields a tenant edits on a workload record, in form order; each change becomes a WorkloadChange.
WORKLOAD_FIELDS = (
    "name",
    "phase",
    "status",
    "model_name",
    "architecture",
    "parameter_count",
    "active_parameter_count",
    "target_tokens",
    "framework",
    "tensor_parallel",
    "pipeline_parallel",
    "data_parallel",
    "expert_parallel",
    "cluster_type",
    "storage",
    "allocation",
    "notes",
)


READ_ONLY = _("Workload records are kept by the organization's members; program staff read them.")


def _require_workload_writer(user, organization: Organization) -> OrgAccess:
    access = get_org_access_or_404(user, organization.slug)
    access.require(access.can_write_workloads, READ_ONLY)
    return access


def _check_fields(data: dict) -> None:
    unknown = set(data) - set(WORKLOAD_FIELDS)
    if unknown:  # a programming error, not bad input: the views and serializers name the fields
        raise TypeError(f"Not workload fields: {sorted(unknown)}")


def _history_text(workload: Workload, field: str) -> str:
    value = getattr(workload, field)
    return "" if value is None else str(value)


def _raw(workload: Workload, field: str):
    return getattr(workload, Workload._meta.get_field(field).attname)


def _save_workload(workload: Workload) -> None:
    duplicate = Workload.objects.for_org(workload.organization).filter(name=workload.name).exclude(pk=workload.pk)
    if workload.name and duplicate.exists():
        raise ValidationError({"name": _("Your organization already has a workload with this name.")})
    # Workload.clean() words the check constraints' rules per field; the database still enforces them.
    workload.full_clean(validate_constraints=False)
    try:
        with transaction.atomic():
            workload.save()
    except IntegrityError as error:
        # Two saves raced past full_clean's uniqueness check: same answer as the check would give.
        raise ValidationError({"name": _("Your organization already has a workload with this name.")}) from error


@transaction.atomic
def create_workload(*, user, organization: Organization, data: dict) -> Workload:
    _require_workload_writer(user, organization)
    _check_fields(data)
    workload = Workload(organization=organization, created_by=user, **data)
    _save_workload(workload)
    WorkloadChange.objects.create(
        organization=organization, workload=workload, actor=user, kind=WorkloadChange.Kind.CREATED
    )
    return workload


@transaction.atomic
def update_workload(*, user, workload: Workload, data: dict) -> Workload:
    """Apply `data` (field -> new value) and keep one WorkloadChange per field whose value changed."""
    _require_workload_writer(user, workload.organization)
    _check_fields(data)
    # Re-read under a row lock: two people editing at once each get their own before → after.
    locked = (
        Workload.objects.select_for_update(of=("self",))
        .select_related("organization", "allocation__pool__instance_type", "allocation__organization")
        .get(pk=workload.pk)
    )
    before = {field: (_raw(locked, field), _history_text(locked, field)) for field in data}
    for field, value in data.items():
        setattr(locked, field, value)
    changed = [field for field in data if _raw(locked, field) != before[field][0]]
    if not changed:
        return locked
    _save_workload(locked)
    WorkloadChange.objects.bulk_create(
        WorkloadChange(
            organization=locked.organization,
            workload=locked,
            actor=user,
            kind=WorkloadChange.Kind.CHANGED,
            field=field,
            old_value=before[field][1],
            new_value=_history_text(locked, field),
        )
        for field in changed
    )
    return locked
