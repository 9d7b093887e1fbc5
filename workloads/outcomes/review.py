"""The cycle review: before the program ends, each organization's admin confirms that its members, milestones and
deliverables are right (ColdFront's yearly project review). It opens CYCLE_REVIEW_DAYS before the program's last
day; until an organization has confirmed, its admins are reminded by mail every REMINDER_EVERY (beat), and the
program's outcomes page lists who has not."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.mail import EmailMessage, get_connection
from django.db import transaction
from django.db.models import F, Q
from django.template.loader import render_to_string
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from portal.links import portal_url
from tenants.access import get_org_access_or_404
from tenants.audit import record_audit
from tenants.models import Membership, Organization, Program
from workloads.outcomes.models import CycleReview

REMINDER_EVERY = timedelta(days=7)
ADMINS_ONLY = gettext_lazy("An admin of the organization confirms its cycle review.")


def opens_on(program: Program) -> date:
    return program.ends_on - timedelta(days=settings.CYCLE_REVIEW_DAYS)


def is_open(program: Program | None, *, today: date) -> bool:
    return program is not None and opens_on(program) <= today <= program.ends_on


@dataclass
class ReviewState:
    organization: Organization
    review: CycleReview | None

    @property
    def done(self) -> bool:
        return self.review is not None and self.review.confirmed_at is not None


def states(program: Program, organizations) -> list[ReviewState]:
    """Each organization's review, not confirmed first. Two queries."""
    organizations = list(organizations)
    reviews = {
        r.organization_id: r
        for r in CycleReview.objects.filter(program=program, organization__in=organizations).select_related(
            "confirmed_by"
        )
    }
    found = [ReviewState(o, reviews.get(o.pk)) for o in organizations]
    return sorted(found, key=lambda s: (s.done, s.organization.name))


@transaction.atomic
def confirm(*, user, program: Program, organization: Organization, comment: str = "") -> CycleReview:
    access = get_org_access_or_404(user, organization.slug)
    if access.membership is None or not access.membership.is_admin:
        raise ValidationError(str(ADMINS_ONLY))
    if not is_open(program, today=timezone.localdate()):
        raise ValidationError(
            _("The cycle review is open from %(first)s to %(last)s.")
            % {"first": opens_on(program).isoformat(), "last": program.ends_on.isoformat()}
        )
    review, _created = CycleReview.objects.select_for_update(of=("self",)).get_or_create(
        program=program, organization=organization
    )
    review.confirmed_by, review.confirmed_at, review.comment = user, timezone.now(), comment.strip()
    review.save()
    record_audit(
        actor=user, organization=organization, action="review.confirmed", target=review, comment=review.comment
    )
    return review


def remind(*, now: datetime | None = None) -> int:
    """Beat, daily: mail the admins of each organization that has not confirmed its review, at most every
    REMINDER_EVERY (a compare-and-set on `reminded_at`, so a second run sends nothing). Returns the mails sent."""
    now = now or timezone.now()
    program = Program.objects.first()
    if not is_open(program, today=timezone.localdate(now)):
        return 0
    sent = 0
    for organization in Organization.objects.order_by("name"):
        review, _created = CycleReview.objects.get_or_create(program=program, organization=organization)
        if review.confirmed_at is not None:
            continue
        due = Q(reminded_at__isnull=True) | Q(reminded_at__lte=now - REMINDER_EVERY)
        claimed = CycleReview.objects.filter(Q(pk=review.pk) & due).update(
            reminded_at=now, reminders=F("reminders") + 1
        )
        if not claimed:
            continue
        try:
            sent += _mail_admins(program, organization)
        except Exception:
            # Give the claim back so the task's retry (or tomorrow's run) sends it.
            CycleReview.objects.filter(pk=review.pk).update(
                reminded_at=review.reminded_at, reminders=F("reminders") - 1
            )
            raise
    return sent


def _mail_admins(program: Program, organization: Organization) -> int:
    admins = get_user_model().objects.filter(
        is_active=True, memberships__organization=organization, memberships__role=Membership.Role.ADMIN
    )
    addresses = sorted(admins.exclude(email="").values_list("email", flat=True))
    if not addresses:
        return 0
    with translation.override(organization.language):
        subject = _("[FM Program] Confirm %(org)s's cycle review by %(day)s") % {
            "org": organization.name,
            "day": program.ends_on.isoformat(),
        }
        body = render_to_string(
            "workloads/outcomes/email/review_reminder.txt",
            {"organization": organization, "program": program, "url": portal_url("outcomes:review", organization.slug)},
        )
    messages = [EmailMessage(subject, body, settings.DEFAULT_FROM_EMAIL, [address]) for address in addresses]
    return get_connection().send_messages(messages) or 0
