"""Writes to milestones, deliverables and budgets. Views, serializers and tasks parse input and call one function
here; each checks who may act through tenants.access, validates, writes, and records the change in the audit
trail (tenants.audit), which is also the object's history.

Who does what: program managers set an organization's milestones (they come from its funding agreement) and the
budgets; the organization's members report a milestone done with its evidence, and record their deliverables;
program staff confirm a reported milestone or return it with a reason. Measured milestones are met by themselves.
"""

from __future__ import annotations

from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from tenants.access import get_org_access_or_404, is_program_manager, is_program_staff, require
from tenants.audit import record_audit
from tenants.models import Organization, Program
from workloads.outcomes.milestones import workload_tokens
from workloads.outcomes.models import Budget, Deliverable, Milestone

CENTS = Decimal("0.01")
MILESTONE_FIELDS = ("title", "description", "due_on", "workload", "target_tokens")
DELIVERABLE_FIELDS = (
    "kind", "title", "released_on", "url", "milestone", "hf_repo_id", "license", "parameter_count", "run", "model",
    "benchmark", "setting", "metric", "score", "authors", "venue", "doi", "arxiv_id",
)  # fmt: skip
BUDGET_FIELDS = ("amount", "currency", "alert_percents", "alert_on_forecast", "note")

MANAGERS_ONLY = gettext_lazy("Milestones and budgets come from the funding agreement: a program manager sets them.")
MEMBERS_ONLY = gettext_lazy("The organization's members record its deliverables and report its milestones.")

AUDIT_ACTIONS = {
    "milestone.created": gettext_lazy("set a milestone"),
    "milestone.changed": gettext_lazy("changed a milestone"),
    "milestone.reported": gettext_lazy("reported the milestone done"),
    "milestone.confirmed": gettext_lazy("confirmed the milestone met"),
    "milestone.returned": gettext_lazy("returned the milestone as not met yet"),
    "milestone.met": gettext_lazy("the milestone was met: its tokens were trained"),
    "milestone.dropped": gettext_lazy("dropped the milestone"),
    "deliverable.recorded": gettext_lazy("recorded a deliverable"),
    "deliverable.changed": gettext_lazy("changed a deliverable"),
    "deliverable.removed": gettext_lazy("removed a deliverable"),
    "budget.set": gettext_lazy("set the budget"),
    "budget.changed": gettext_lazy("changed the budget"),
    "report.generated": gettext_lazy("generated a report"),
    "review.confirmed": gettext_lazy("confirmed the organization's cycle review"),
}


def _value(obj, field: str):
    value = getattr(obj, field)
    return value.pk if hasattr(value, "pk") else value


def _apply(obj, data: dict, fields: tuple[str, ...]) -> dict:
    """Set the fields given; return {field: [before, after]} for those that changed."""
    unknown = set(data) - set(fields)
    if unknown:  # a programming error: views and serializers name the fields
        raise TypeError(f"Unknown fields: {sorted(unknown)}")
    changes = {}
    for field, value in data.items():
        before = _value(obj, field)
        setattr(obj, field, value)
        after = _value(obj, field)
        if before != after:
            changes[field] = (before, after)
    return changes


def _check_measure(milestone: Milestone) -> None:
    if milestone.workload_id and milestone.workload.organization_id != milestone.organization_id:
        raise ValidationError({"workload": _("Choose one of the organization's own workloads.")})
    if bool(milestone.workload_id) != (milestone.target_tokens is not None):
        field = "target_tokens" if milestone.workload_id else "workload"
        raise ValidationError({field: _("A measured milestone names both a workload and the tokens to train.")})


# --- Milestones ------------------------------------------------------------------------------------------------


@transaction.atomic
def create_milestone(*, user, organization: Organization, data: dict) -> Milestone:
    require(is_program_manager(user), str(MANAGERS_ONLY))
    milestone = Milestone(organization=organization, created_by=user)
    changes = _apply(milestone, data, MILESTONE_FIELDS)
    _check_measure(milestone)
    milestone.full_clean()
    milestone.save()
    record_audit(actor=user, organization=organization, action="milestone.created", target=milestone, changes=changes)
    return milestone


@transaction.atomic
def update_milestone(*, user, milestone: Milestone, data: dict) -> Milestone:
    require(is_program_manager(user), str(MANAGERS_ONLY))
    milestone = Milestone.objects.select_for_update(of=("self",)).get(pk=milestone.pk)
    changes = _apply(milestone, data, MILESTONE_FIELDS)
    if not changes:
        return milestone
    remeasured = {"workload", "target_tokens"} & set(changes)
    if remeasured and milestone.status == Milestone.Status.MET and milestone.confirmed_by_id is None:
        # Met by its old measure (an amended agreement raised the tokens): it is measured again from now on.
        changes["status"] = (milestone.status, Milestone.Status.OPEN)
        milestone.status, milestone.met_at = Milestone.Status.OPEN, None
    _check_measure(milestone)
    milestone.full_clean()
    milestone.save()
    record_audit(
        actor=user, organization=milestone.organization, action="milestone.changed", target=milestone, changes=changes
    )
    return milestone


def _locked(milestone: Milestone) -> Milestone:
    return Milestone.objects.select_for_update(of=("self",)).select_related("organization").get(pk=milestone.pk)


@transaction.atomic
def report_milestone(*, user, milestone: Milestone, evidence: str) -> Milestone:
    """The organization says a milestone it cannot be measured on is done, with its evidence (a link, a note)."""
    access = get_org_access_or_404(user, milestone.organization.slug)
    access.require(access.acts, str(MEMBERS_ONLY))
    milestone = _locked(milestone)
    if milestone.measured:
        raise ValidationError(_("This milestone is measured: it is met when its workload has trained its tokens."))
    if milestone.status != Milestone.Status.OPEN:
        raise ValidationError(_("Only an open milestone can be reported done."))
    if not evidence.strip():
        raise ValidationError({"evidence": _("Say what shows it is done: a link, a release, a report.")})
    before = (milestone.status, milestone.evidence)
    milestone.status, milestone.evidence = Milestone.Status.REPORTED, evidence.strip()
    milestone.reported_by, milestone.reported_at = user, timezone.now()
    milestone.full_clean()
    milestone.save()
    record_audit(
        actor=user,
        organization=milestone.organization,
        action="milestone.reported",
        target=milestone,
        changes={"status": (before[0], milestone.status), "evidence": (before[1], milestone.evidence)},
    )
    return milestone


@transaction.atomic
def confirm_milestone(*, user, milestone: Milestone, comment: str = "") -> Milestone:
    require(is_program_staff(user), _("Program staff confirm a milestone."))
    milestone = _locked(milestone)
    if milestone.status != Milestone.Status.REPORTED:
        raise ValidationError(_("Only a milestone reported done can be confirmed."))
    milestone.status, milestone.confirmed_by = Milestone.Status.MET, user
    milestone.met_at = milestone.reported_at
    milestone.save()
    record_audit(
        actor=user,
        organization=milestone.organization,
        action="milestone.confirmed",
        target=milestone,
        changes={"status": (Milestone.Status.REPORTED, Milestone.Status.MET)},
        comment=comment,
    )
    return milestone


@transaction.atomic
def return_milestone(*, user, milestone: Milestone, comment: str) -> Milestone:
    require(is_program_staff(user), _("Program staff confirm a milestone."))
    if not comment.strip():
        raise ValidationError({"comment": _("Say why it is not met yet: the organization reads it.")})
    milestone = _locked(milestone)
    if milestone.status != Milestone.Status.REPORTED:
        raise ValidationError(_("Only a milestone reported done can be returned."))
    milestone.status, milestone.reported_at, milestone.reported_by = Milestone.Status.OPEN, None, None
    milestone.save()
    record_audit(
        actor=user,
        organization=milestone.organization,
        action="milestone.returned",
        target=milestone,
        changes={"status": (Milestone.Status.REPORTED, Milestone.Status.OPEN)},
        comment=comment.strip(),
    )
    return milestone


@transaction.atomic
def drop_milestone(*, user, milestone: Milestone, comment: str) -> Milestone:
    require(is_program_manager(user), str(MANAGERS_ONLY))
    if not comment.strip():
        raise ValidationError({"comment": _("Say why the milestone is dropped (e.g. the agreement was amended).")})
    milestone = _locked(milestone)
    if milestone.status == Milestone.Status.DROPPED:
        return milestone
    before = milestone.status
    milestone.status = Milestone.Status.DROPPED
    milestone.save()
    record_audit(
        actor=user,
        organization=milestone.organization,
        action="milestone.dropped",
        target=milestone,
        changes={"status": (before, milestone.status)},
        comment=comment.strip(),
    )
    return milestone


def follow_measured_milestones(*, now=None) -> int:
    """Mark met every open measured milestone whose workload has trained its tokens, at the workload's latest
    progress point; each once (a compare-and-set on the status). Returns how many."""
    now = now or timezone.now()
    open_ones = list(
        Milestone.objects.filter(status=Milestone.Status.OPEN, workload__isnull=False).select_related("organization")
    )
    if not open_ones:
        return 0
    tokens, _rate, latest = workload_tokens([m.workload_id for m in open_ones], now=now)
    met = 0
    for milestone in open_ones:
        trained = tokens.get(milestone.workload_id, 0)
        if trained < milestone.target_tokens:
            continue
        with transaction.atomic():
            at = latest.get(milestone.workload_id) or now
            if not Milestone.objects.filter(pk=milestone.pk, status=Milestone.Status.OPEN).update(
                status=Milestone.Status.MET, met_at=at
            ):
                continue  # another run got there first
            record_audit(
                actor=None,  # the portal: history shows "system"
                organization=milestone.organization,
                action="milestone.met",
                target=milestone,
                changes={"status": (Milestone.Status.OPEN, Milestone.Status.MET)},
                comment=f"{trained:,} / {milestone.target_tokens:,}",
            )
            met += 1
    return met


# --- Deliverables ----------------------------------------------------------------------------------------------


def _require_member(user, organization: Organization) -> None:
    access = get_org_access_or_404(user, organization.slug)
    access.require(access.acts, str(MEMBERS_ONLY))


def _save_deliverable(deliverable: Deliverable) -> None:
    taken = Deliverable.objects.for_org(deliverable.organization).filter(hf_repo_id__iexact=deliverable.hf_repo_id)
    taken = taken.exclude(pk=deliverable.pk)
    if deliverable.hf_repo_id and taken.exists():
        # Said on the field (the unique constraint alone would say it at the top of the form).
        raise ValidationError(
            {"hf_repo_id": _("The organization has already recorded this repository as a deliverable.")}
        )
    deliverable.full_clean()
    deliverable.save()


@transaction.atomic
def record_deliverable(*, user, organization: Organization, data: dict) -> Deliverable:
    _require_member(user, organization)
    deliverable = Deliverable(organization=organization, created_by=user)
    changes = _apply(deliverable, data, DELIVERABLE_FIELDS)
    _save_deliverable(deliverable)
    record_audit(
        actor=user, organization=organization, action="deliverable.recorded", target=deliverable, changes=changes
    )
    return deliverable


@transaction.atomic
def update_deliverable(*, user, deliverable: Deliverable, data: dict) -> Deliverable:
    _require_member(user, deliverable.organization)
    deliverable = Deliverable.objects.select_for_update(of=("self",)).get(pk=deliverable.pk)
    changes = _apply(deliverable, data, DELIVERABLE_FIELDS)
    if not changes:
        return deliverable
    _save_deliverable(deliverable)
    record_audit(
        actor=user,
        organization=deliverable.organization,
        action="deliverable.changed",
        target=deliverable,
        changes=changes,
    )
    return deliverable


@transaction.atomic
def remove_deliverable(*, user, deliverable: Deliverable) -> None:
    _require_member(user, deliverable.organization)
    record_audit(
        actor=user,
        organization=deliverable.organization,
        action="deliverable.removed",
        target=deliverable,
        comment=deliverable.title,
    )
    deliverable.delete()


# --- Budgets ---------------------------------------------------------------------------------------------------


def clean_percents(value) -> list[int]:
    """Alert thresholds: distinct whole percents 1–1000, at most five, ascending."""
    if isinstance(value, str):
        parts = [p.strip().rstrip("%") for p in value.replace("、", ",").split(",") if p.strip()]
    else:
        parts = list(value or [])
    try:
        numbers = sorted({int(p) for p in parts})
    except (TypeError, ValueError):
        raise ValidationError({"alert_percents": _("Give whole percents separated by commas, e.g. 80, 100.")}) from None
    if len(numbers) > 5 or any(not 1 <= n <= 1000 for n in numbers):
        raise ValidationError({"alert_percents": _("At most five thresholds, each from 1 to 1000 percent.")})
    return numbers


@transaction.atomic
def set_budget(*, user, program: Program, organization: Organization | None, data: dict) -> Budget:
    """Create or change the program's budget (`organization` None) or an organization's."""
    require(is_program_manager(user), str(MANAGERS_ONLY))
    # Ordered by pk, not Meta.ordering (organization__name), and locking its own row only: PostgreSQL refuses FOR
    # UPDATE on the outer join that ordering needs for the program's budget (organization null).
    rows = Budget.objects.select_for_update(of=("self",)).filter(program=program, organization=organization)
    budget = rows.order_by("pk").first() or Budget(program=program, organization=organization, alert_percents=[80, 100])
    created = budget.pk is None
    data = dict(data)
    if "alert_percents" in data:
        data["alert_percents"] = clean_percents(data["alert_percents"])
    if isinstance(data.get("amount"), Decimal):
        data["amount"] = data["amount"].quantize(CENTS)  # as stored, so the history compares like with like
    changes = _apply(budget, data, BUDGET_FIELDS)
    if not changes and not created:
        return budget
    budget.updated_by = user
    budget.full_clean()
    budget.save()
    record_audit(
        actor=user,
        organization=organization,
        action="budget.set" if created else "budget.changed",
        target=budget,
        changes=changes,
    )
    return budget
