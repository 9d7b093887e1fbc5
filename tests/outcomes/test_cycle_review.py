"""The cycle review: it opens CYCLE_REVIEW_DAYS (30) before the program's last day (2027-06-30: from 2027-05-31); an
organization's admin confirms it; its admins are reminded weekly until then; the program sees who has not."""

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
import time_machine
from django.core import mail
from django.core.exceptions import ValidationError

from tenants.models import Membership
from tests.factories import MembershipFactory
from workloads.outcomes import review
from workloads.outcomes.models import CycleReview

JST = ZoneInfo("Asia/Tokyo")
BEFORE = datetime(2027, 5, 30, 12, 0, tzinfo=JST)
OPEN = datetime(2027, 6, 1, 9, 0, tzinfo=JST)


@pytest.fixture
def admins(program, alpha):
    return [MembershipFactory(organization=alpha, role=Membership.Role.ADMIN).user for _ in range(2)]


def test_admins_are_reminded_weekly_until_one_confirms(program, alpha, admins):
    assert review.remind(now=BEFORE) == 0  # not open yet
    assert review.remind(now=OPEN) == 2  # both admins
    assert review.remind(now=OPEN + timedelta(days=3)) == 0  # a week has not passed
    assert review.remind(now=OPEN + timedelta(days=7)) == 2
    assert {m.to[0] for m in mail.outbox} == {a.email for a in admins}
    assert "Confirm Alpha Research's cycle review by 2027-06-30" in mail.outbox[0].subject
    with time_machine.travel(OPEN + timedelta(days=8), tick=False):
        review.confirm(user=admins[0], program=program, organization=alpha, comment="Two members left in May.")
    assert review.remind(now=OPEN + timedelta(days=14)) == 0
    state = review.states(program, [alpha])[0]
    assert state.done and state.review.confirmed_by == admins[0] and state.review.reminders == 2


def test_only_an_admin_confirms_and_only_while_it_is_open(program, alpha, admins):
    member = MembershipFactory(organization=alpha, role=Membership.Role.MEMBER).user
    with time_machine.travel(OPEN, tick=False), pytest.raises(ValidationError):
        review.confirm(user=member, program=program, organization=alpha)
    with time_machine.travel(BEFORE, tick=False), pytest.raises(ValidationError):
        review.confirm(user=admins[0], program=program, organization=alpha)
    assert not CycleReview.objects.filter(confirmed_at__isnull=False).exists()


def test_the_pages_show_the_review_and_who_has_not_confirmed(program, alpha, admins, manager, client):
    with time_machine.travel(OPEN, tick=False):
        client.force_login(admins[0])
        page = client.get(f"/orgs/{alpha.slug}/outcomes/review/").content.decode()
        assert "Our members, milestones and deliverables are right" in page
        assert client.post(f"/orgs/{alpha.slug}/outcomes/review/", {"comment": "All right."}).status_code == 302
        client.force_login(manager)
        program_page = client.get("/outcomes/").content.decode()
    assert "Cycle review" in program_page and "confirmed" in program_page


class FailingBackend:
    """A mail server that refuses every message."""

    def __init__(self, *args, **kwargs):
        pass

    def send_messages(self, messages):
        raise ConnectionRefusedError("mail server down")


def test_a_reminder_the_mail_server_refused_is_sent_again(program, alpha, admins, settings):
    settings.EMAIL_BACKEND = "tests.outcomes.test_cycle_review.FailingBackend"
    with pytest.raises(ConnectionRefusedError):
        review.remind(now=OPEN)
    state = CycleReview.objects.get(organization=alpha)
    assert (state.reminded_at, state.reminders) == (None, 0)
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    assert review.remind(now=OPEN + timedelta(hours=1)) == 2
