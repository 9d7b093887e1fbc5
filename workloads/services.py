"""Writes for workload records, support cases and the weekly review. Views, serializers and tasks parse
input and call one function here; every function checks who may act through tenants.access, validates,
writes under a row lock and records the history (WorkloadChange, CaseEvent) itself — never a signal.
"""

from __future__ import annotations

import logging
from datetime import date, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.mail import EmailMessage, get_connection
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.translation import gettext as _

from portal.links import portal_url
from tenants.access import OrgAccess, get_org_access_or_404, is_program_staff
from tenants.models import Organization, StaffRole
from workloads.models import ActionItem, CaseEvent, ReviewMeeting, SupportCase, Workload, WorkloadChange

logger = logging.getLogger(__name__)
User = get_user_model()
Status = SupportCase.Status

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


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()  # "not part of this change", as opposed to None ("clear it")


# --- Workloads -----------------------------------------------------------------------------------


def can_write_workloads(access: OrgAccess) -> bool:
    # The issue: a tenant writes its own records, program staff read every org's.
    return access.membership is not None


def _require_workload_writer(user, organization: Organization) -> OrgAccess:
    access = get_org_access_or_404(user, organization.slug)
    if not can_write_workloads(access):
        raise PermissionDenied(_("Workload records are kept by the organization's members; program staff read them."))
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


# --- Support cases -------------------------------------------------------------------------------


def _require_case_writer(user, organization: Organization) -> OrgAccess:
    access = get_org_access_or_404(user, organization.slug)
    if not access.can_write:
        raise PermissionDenied(_("You cannot act on this organization's support cases."))
    return access


def _locked_case(case: SupportCase) -> SupportCase:
    return (
        SupportCase.objects.select_for_update(of=("self",))
        .select_related("organization", "assignee", "workload")
        .get(pk=case.pk)
    )


def _add_event(
    case: SupportCase, *, user, kind: str, internal: bool = False, body: str = "", old="", new=""
) -> CaseEvent:
    event = CaseEvent.objects.create(
        organization_id=case.organization_id,
        case=case,
        actor=user,
        kind=kind,
        internal=internal,
        body=body,
        old_value=str(old)[:200],
        new_value=str(new)[:200],
    )
    if not internal:
        # Only what the tenant can see moves "last update": an internal note must not show through it.
        case.updated_at = event.created_at
    if kind in NOTIFIED_KINDS:
        from workloads.tasks import notify_case_event

        # Enqueued only if the transaction commits: a rolled-back change mails nobody.
        notify_case_event.delay_on_commit(event.pk)
    return event


def _check_workload_link(organization: Organization, workload: Workload | None) -> None:
    if workload is not None and workload.organization_id != organization.pk:
        raise ValidationError({"workload": _("This workload belongs to another organization.")})


@transaction.atomic
def open_case(
    *,
    user,
    organization: Organization,
    title: str,
    description: str,
    category: str,
    severity: str = SupportCase.Severity.S3,
    workload: Workload | None = None,
    assignee=UNSET,
) -> SupportCase:
    """Open a case; it is assigned to the org's lead support engineer unless staff name someone else."""
    access = _require_case_writer(user, organization)
    _check_workload_link(organization, workload)
    if assignee is UNSET:
        assignee = organization.lead_engineer
    elif not access.is_staff:
        raise PermissionDenied(_("Only program staff can assign a case."))
    elif assignee is not None and not is_program_staff(assignee):
        raise ValidationError({"assignee": _("Assign the case to a member of the program staff.")})
    case = SupportCase(
        organization=organization,
        title=(title or "").strip(),
        description=(description or "").strip(),
        category=category,
        severity=severity,
        assignee=assignee,
        workload=workload,
        opened_by=user,
        opened_by_staff=access.is_staff,
        updated_at=timezone.now(),
    )
    case.full_clean()
    case.save()
    _add_event(case, user=user, kind=CaseEvent.Kind.OPENED, body=case.description)
    case.save(update_fields=["updated_at"])
    return case


@transaction.atomic
def add_comment(*, user, case: SupportCase, body: str, internal: bool = False) -> CaseEvent:
    access = _require_case_writer(user, case.organization)
    if internal and not access.is_staff:
        raise PermissionDenied(_("Only program staff can add internal notes."))
    case = _locked_case(case)
    if case.is_closed:
        raise ValidationError({"body": _("This case is closed. Reopen it to add a comment.")})
    body = (body or "").strip()
    if not body:
        raise ValidationError({"body": _("Write something first.")})
    event = _add_event(case, user=user, kind=CaseEvent.Kind.COMMENT, internal=internal, body=body)
    if not internal:
        _note_first_response(case, access, event)
        if not access.is_staff and case.status == Status.WAITING_ON_TENANT:
            # The tenant answered: the ball is back with the program team.
            _set_status(case, user=user, status=Status.IN_PROGRESS)
    case.save(update_fields=["updated_at", "first_response_at", "status", "resolved_at"])
    return event


def _note_first_response(case: SupportCase, access: OrgAccess, event: CaseEvent) -> None:
    # Time to first response: the program team's first reply the tenant can read. A case the team
    # opened itself has no such wait, so it keeps no first response.
    if access.is_staff and case.first_response_at is None and not case.opened_by_staff:
        case.first_response_at = event.created_at


TENANT_STATUSES = (Status.OPEN, Status.RESOLVED, Status.CLOSED)


def _set_status(case: SupportCase, *, user, status: str) -> None:
    old = case.status
    was_done, now_done = old in SupportCase.DONE_STATUSES, status in SupportCase.DONE_STATUSES
    if was_done and not now_done:
        case.resolved_at = None  # reopened: the clock runs again
    elif now_done and not was_done:
        case.resolved_at = timezone.now()
    case.status = status
    _add_event(case, user=user, kind=CaseEvent.Kind.STATUS_CHANGED, old=old, new=status)


@transaction.atomic
def update_case(
    *,
    user,
    case: SupportCase,
    status: str = UNSET,
    assignee=UNSET,
    severity: str = UNSET,
    workload: Workload | None = UNSET,
    comment: str = "",
) -> SupportCase:
    """Change a case's status (reopening included), assignee, severity or linked workload, optionally with a
    comment; each change is one CaseEvent. A closed case accepts nothing until it is reopened."""
    access = _require_case_writer(user, case.organization)
    case = _locked_case(case)
    errors: dict[str, str] = {}
    if status is not UNSET and status != case.status:
        if status not in Status.values:
            errors["status"] = _("“%(value)s” is not a case status.") % {"value": status}
        elif not access.is_staff and status not in TENANT_STATUSES:
            raise PermissionDenied(
                _("Only program staff can set a case to “%(status)s”.") % {"status": Status(status).label}
            )
        elif case.is_closed and status not in SupportCase.ACTIVE_STATUSES:
            errors["status"] = _("A closed case can only be reopened.")
        elif status == Status.OPEN and case.is_active:
            errors["status"] = _("Only a resolved or closed case can be reopened.")
    reopening = status is not UNSET and status in SupportCase.ACTIVE_STATUSES and not case.is_active
    if case.is_closed and not reopening and (comment or any(v is not UNSET for v in (assignee, severity, workload))):
        errors["status"] = _("This case is closed. Reopen it first.")
    if assignee is not UNSET:
        if not access.is_staff:
            raise PermissionDenied(_("Only program staff can assign a case."))
        if assignee is not None and not is_program_staff(assignee):
            errors["assignee"] = _("Assign the case to a member of the program staff.")
    if severity is not UNSET and severity not in SupportCase.Severity.values:
        errors["severity"] = _("“%(value)s” is not a severity.") % {"value": severity}
    if workload is not UNSET and workload is not None and workload.organization_id != case.organization_id:
        errors["workload"] = _("This workload belongs to another organization.")
    if errors:
        raise ValidationError(errors)

    if status is not UNSET and status != case.status:
        _set_status(case, user=user, status=status)
    if assignee is not UNSET and assignee != case.assignee:
        old = case.assignee.get_username() if case.assignee else ""
        case.assignee = assignee
        new = assignee.get_username() if assignee else ""
        _add_event(case, user=user, kind=CaseEvent.Kind.ASSIGNEE_CHANGED, old=old, new=new)
    if severity is not UNSET and severity != case.severity:
        _add_event(case, user=user, kind=CaseEvent.Kind.SEVERITY_CHANGED, old=case.severity, new=severity)
        case.severity = severity
    if workload is not UNSET and workload != case.workload:
        old = case.workload.name if case.workload else ""
        case.workload = workload
        _add_event(case, user=user, kind=CaseEvent.Kind.LINKED, old=old, new=workload.name if workload else "")
    if comment.strip():
        event = _add_event(case, user=user, kind=CaseEvent.Kind.COMMENT, body=comment.strip())
        _note_first_response(case, access, event)
    case.save()
    return case


# --- Notifications -------------------------------------------------------------------------------

NOTIFIED_KINDS = (
    CaseEvent.Kind.OPENED,
    CaseEvent.Kind.COMMENT,
    CaseEvent.Kind.STATUS_CHANGED,
    CaseEvent.Kind.ASSIGNEE_CHANGED,
)


def case_participants(case: SupportCase, *, internal: bool) -> list:
    """Who hears about a case: its opener, assignee, the org's lead engineer and everyone who wrote on it —
    tenants only while they are still members of the org, and never for an internal entry. With nobody
    from the program team on the case, the program managers hear about it so it is not lost."""
    ids = set(case.events.exclude(actor=None).values_list("actor_id", flat=True))
    ids |= {i for i in (case.opened_by_id, case.assignee_id, case.organization.lead_engineer_id) if i}
    staff = Q(staff_role__isnull=False)
    people = User.objects.filter(pk__in=ids, is_active=True).exclude(email="").select_related("staff_role")
    people = people.filter(staff) if internal else people.filter(staff | Q(memberships__organization=case.organization))
    people = list(people.distinct().order_by("pk"))
    if not any(is_program_staff(p) for p in people):
        managers = User.objects.filter(is_active=True, staff_role__role=StaffRole.Role.PROGRAM_MANAGER).select_related(
            "staff_role"
        )
        people += list(managers.exclude(email="").exclude(pk__in=[p.pk for p in people]).order_by("pk"))
    return people


def send_case_event_email(*, event_id: int) -> int:
    """Mail one case event to its participants, once: the claim on `notified_at` is a compare-and-set, so a
    rerun or a second worker sends nothing. Returns how many messages went out."""
    claimed = CaseEvent.objects.filter(pk=event_id, notified_at__isnull=True).update(notified_at=timezone.now())
    if not claimed:
        return 0
    event = CaseEvent.objects.select_related("case__organization__lead_engineer", "case__assignee", "actor").get(
        pk=event_id
    )
    case = event.case
    recipients = [p for p in case_participants(case, internal=event.internal) if p.pk != event.actor_id]
    if event.internal:
        # Belt and braces: an internal entry only ever goes to program staff.
        recipients = [p for p in recipients if is_program_staff(p)]
    subject = _("[FM Program] Case #%(id)s: %(title)s") % {"id": case.pk, "title": case.title}
    body = render_to_string(
        "workloads/email/case_event.txt",
        {"event": event, "case": case, "url": portal_url("workloads:case-detail", case.pk)},
    )
    # One message per person: nobody learns the other participants' addresses.
    messages = [EmailMessage(subject, body, settings.DEFAULT_FROM_EMAIL, [person.email]) for person in recipients]
    try:
        sent = get_connection().send_messages(messages) if messages else 0
    except Exception:
        # Give the claim back so the task's retry can send it.
        CaseEvent.objects.filter(pk=event_id).update(notified_at=None)
        raise
    return sent or 0


# --- Weekly review -------------------------------------------------------------------------------


def week_of(day: date) -> date:
    """The Monday of `day`'s ISO week."""
    return day - timedelta(days=day.weekday())


def this_week() -> date:
    # localdate() is in settings.TIME_ZONE: the program's weeks start on Monday 00:00 Asia/Tokyo.
    return week_of(timezone.localdate())


def _require_staff(user) -> None:
    if not is_program_staff(user):
        raise PermissionDenied(_("The weekly review is for program staff."))


@transaction.atomic
def save_review_meeting(
    *, user, week_start: date, attendees: list | None = None, other_attendees: str = "", minutes: str = ""
) -> tuple[ReviewMeeting, bool]:
    """Create or update the meeting record of the week containing `week_start`; True when created."""
    _require_staff(user)
    attendees = list(attendees or [])
    outsiders = [a.get_username() for a in attendees if not is_program_staff(a)]
    if outsiders:
        raise ValidationError({"attendees": _("Not program staff: %(names)s.") % {"names": ", ".join(outsiders)}})
    meeting, created = ReviewMeeting.objects.select_for_update().get_or_create(
        week_start=week_of(week_start), defaults={"created_by": user}
    )
    meeting.other_attendees = (other_attendees or "").strip()
    meeting.minutes = (minutes or "").strip()
    meeting.full_clean()
    meeting.save()
    meeting.attendees.set(attendees)
    return meeting, created


@transaction.atomic
def add_action_item(
    *,
    user,
    meeting: ReviewMeeting | None = None,
    week_start: date | None = None,
    text: str,
    organization: Organization | None = None,
    owner=None,
    due_on: date | None = None,
    case: SupportCase | None = None,
    new_case: dict | None = None,
) -> ActionItem:
    """An action item of a review meeting — `meeting`, or the meeting of the week of `week_start`, recorded
    now if it was not yet. It may link an existing case or open a new one (`new_case`: title, category,
    severity, description) in the item's organization."""
    _require_staff(user)
    if meeting is None:
        meeting, _created = ReviewMeeting.objects.get_or_create(
            week_start=week_of(week_start), defaults={"created_by": user}
        )
    text = (text or "").strip()
    errors = {}
    if not text:
        errors["text"] = _("Say what needs doing.")
    if owner is not None and not is_program_staff(owner):
        errors["owner"] = _("The owner must be a member of the program staff.")
    if case is not None and new_case:
        errors["case"] = _("Link an existing case or open a new one, not both.")
    if case is not None and organization is not None and case.organization_id != organization.pk:
        errors["case"] = _("This case belongs to another organization than the action item.")
    if new_case and organization is None:
        errors["organization"] = _("Choose the organization the new case is for.")
    if errors:
        raise ValidationError(errors)
    if new_case:
        case = open_case(
            user=user,
            organization=organization,
            title=new_case.get("title", ""),
            description=new_case.get("description") or text,
            category=new_case.get("category", ""),
            severity=new_case.get("severity") or SupportCase.Severity.S3,
        )
    item = ActionItem(
        meeting=meeting,
        text=text,
        organization=organization or (case.organization if case else None),
        owner=owner,
        due_on=due_on,
        case=case,
        created_by=user,
    )
    item.full_clean()
    item.save()
    if case is not None:
        locked = _locked_case(case)
        # Internal: the weekly review is the program team's, the tenant sees the work, not the meeting.
        _add_event(
            locked,
            user=user,
            kind=CaseEvent.Kind.LINKED,
            internal=True,
            new=_("Action item of the weekly review %(week)s: %(text)s") % {"week": meeting.iso_week, "text": text},
        )
    return item


@transaction.atomic
def set_action_item_done(*, user, item: ActionItem, done: bool) -> ActionItem:
    _require_staff(user)
    item = ActionItem.objects.select_for_update().get(pk=item.pk)
    if done and item.status != ActionItem.Status.DONE:
        item.status, item.done_at, item.done_by = ActionItem.Status.DONE, timezone.now(), user
    elif not done and item.status != ActionItem.Status.OPEN:
        item.status, item.done_at, item.done_by = ActionItem.Status.OPEN, None, None
    item.save()
    return item
