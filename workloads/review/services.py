"""Writes of the weekly review (program staff only): the meeting record of a week, its action items (which may
link a support case or open one), and marking an item done."""

from __future__ import annotations

from datetime import date

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from portal.periods import week_of
from tenants.access import is_program_staff, require_program_staff
from tenants.models import Organization
from workloads.review.models import ActionItem, ReviewMeeting
from workloads.support.models import SupportCase
from workloads.support.services import link_case, open_case

STAFF_ONLY = gettext_lazy("The weekly review is for program staff.")


@transaction.atomic
def save_review_meeting(
    *, user, week_start: date, attendees: list | None = None, other_attendees: str = "", minutes: str = ""
) -> tuple[ReviewMeeting, bool]:
    """Create or update the meeting record of the week containing `week_start`; True when created."""
    require_program_staff(user, STAFF_ONLY)
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
    require_program_staff(user, STAFF_ONLY)
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
        # Internal: the weekly review is the program team's, the tenant sees the work, not the meeting.
        link_case(
            user=user,
            case=case,
            text=_("Action item of the weekly review %(week)s: %(text)s") % {"week": meeting.iso_week, "text": text},
        )
    return item


@transaction.atomic
def set_action_item_done(*, user, item: ActionItem, done: bool) -> ActionItem:
    require_program_staff(user, STAFF_ONLY)
    item = ActionItem.objects.select_for_update().get(pk=item.pk)
    if done and item.status != ActionItem.Status.DONE:
        item.status, item.done_at, item.done_by = ActionItem.Status.DONE, timezone.now(), user
    elif not done and item.status != ActionItem.Status.OPEN:
        item.status, item.done_at, item.done_by = ActionItem.Status.OPEN, None, None
    item.save()
    return item
