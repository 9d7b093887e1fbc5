import smtplib
from unittest import mock

import pytest
from django.core import mail

from portal.celery import app as celery_app
from tenants.models import StaffRole
from tests.factories import StaffRoleFactory
from workloads.models import CaseEvent
from workloads.support.notifications import send_case_event_email
from workloads.support.services import add_comment, open_case
from workloads.support.tasks import notify_case_event

pytestmark = pytest.mark.django_db
SECRET = "Internal: their NCCL build is ancient, push them to 2.21"


@pytest.fixture(autouse=True)
def portal_url(settings):
    settings.PORTAL_URL = "https://portal.example"


def recipients() -> list[str]:
    return sorted(address for message in mail.outbox for address in message.to)


@pytest.fixture
def case(member, org, lead, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        case = open_case(
            user=member, organization=org, title="NCCL hangs", description="all_reduce stalls", category="networking"
        )
    return case


def test_opening_a_case_mails_the_lead_engineer_not_the_tenant_who_opened_it(case, lead, member):
    assert recipients() == [lead.email]
    [message] = mail.outbox
    assert f"Case #{case.pk}: NCCL hangs" in message.subject
    assert "all_reduce stalls" in message.body
    assert f"Open the case in the portal: https://portal.example/support/{case.pk}/" in message.body


def test_a_staff_reply_reaches_the_tenants_on_the_case(
    case, lead, member, colleague, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        add_comment(user=colleague, case=case, body="Seeing it on our side too.")
    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        add_comment(user=lead, case=case, body="Please set NCCL_DEBUG=INFO and rerun.")
    assert recipients() == sorted([member.email, colleague.email])
    assert all("NCCL_DEBUG=INFO" in m.body for m in mail.outbox)
    # One message per person: nobody sees the other participants' addresses.
    assert all(len(m.to) == 1 and not m.cc and not m.bcc for m in mail.outbox)


def test_internal_notes_are_never_mailed_to_a_tenant(case, lead, member, colleague, django_capture_on_commit_callbacks):
    other_engineer = StaffRoleFactory(role=StaffRole.Role.SUPPORT_ENGINEER).user
    with django_capture_on_commit_callbacks(execute=True):
        add_comment(user=colleague, case=case, body="Me too.")
        add_comment(user=other_engineer, case=case, body="Looking.", internal=True)
    mail.outbox.clear()

    with django_capture_on_commit_callbacks(execute=True):
        add_comment(user=lead, case=case, body=SECRET, internal=True)

    assert recipients() == [other_engineer.email]  # staff on the case only; the lead wrote it
    assert "INTERNAL NOTE" in mail.outbox[0].body and SECRET in mail.outbox[0].body
    tenant_addresses = {member.email, colleague.email}
    assert not [m for m in mail.outbox if tenant_addresses & set(m.to)]


def test_a_removed_member_is_no_longer_mailed(case, lead, member, org, django_capture_on_commit_callbacks):
    org.memberships.filter(user=member).delete()
    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        add_comment(user=lead, case=case, body="Fixed.")
    assert member.email not in recipients()


def test_with_no_staff_on_the_case_the_program_managers_hear_of_it(
    member, org, manager, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        open_case(user=member, organization=org, title="Help", description="?", category="other")
    assert recipients() == [manager.email]


def test_running_the_notification_twice_sends_it_once(case, lead):
    event = case.events.get()
    mail.outbox.clear()
    assert notify_case_event(event.pk) == 0  # already sent when the case was opened
    CaseEvent.objects.filter(pk=event.pk).update(notified_at=None)
    assert notify_case_event(event.pk) == 1
    assert notify_case_event(event.pk) == 0
    assert len(mail.outbox) == 1


def test_a_mail_server_failure_gives_the_claim_back_for_the_retry(case, lead):
    event = case.events.get()
    CaseEvent.objects.filter(pk=event.pk).update(notified_at=None)
    mail.outbox.clear()
    with mock.patch("workloads.support.notifications.get_connection") as connection:
        connection.return_value.send_messages.side_effect = smtplib.SMTPServerDisconnected("gone")
        with pytest.raises(smtplib.SMTPServerDisconnected):
            send_case_event_email(event_id=event.pk)
    assert CaseEvent.objects.get(pk=event.pk).notified_at is None
    assert send_case_event_email(event_id=event.pk) == 1
    assert recipients() == [lead.email]


@pytest.mark.parametrize(("error", "attempts"), [(smtplib.SMTPServerDisconnected("gone"), 7), (KeyError("bug"), 1)])
def test_the_task_retries_transient_mail_errors_only(case, error, attempts):
    celery_app.conf.task_eager_propagates = False  # the eager_celery fixture restores it
    event = case.events.get()
    CaseEvent.objects.filter(pk=event.pk).update(notified_at=None)
    with mock.patch("workloads.support.notifications.get_connection") as connection:
        connection.return_value.send_messages.side_effect = error
        result = notify_case_event.apply(args=[event.pk], throw=False)
    # Eager mode runs the retries at once: the first try plus max_retries=6 for a transient error.
    assert connection.return_value.send_messages.call_count == attempts
    assert result.state == "FAILURE"
    assert CaseEvent.objects.get(pk=event.pk).notified_at is None  # claim given back for a later run


def test_tenants_read_case_email_in_their_organizations_language_and_staff_in_the_portals(
    case, org, member, lead, django_capture_on_commit_callbacks
):
    org.language = "ja"
    org.save(update_fields=["language"])
    with django_capture_on_commit_callbacks(execute=True):
        add_comment(user=member, case=case, body="Still hanging.")
        add_comment(user=lead, case=case, body="Replacing the node.")
    to_lead, to_member = mail.outbox[-2:]
    assert to_lead.to == [lead.email] and to_lead.subject == f"[FM Program] Case #{case.pk}: NCCL hangs"
    assert to_member.to == [member.email] and to_member.subject == f"[FM Program] ケース #{case.pk}: NCCL hangs"
    assert "Replacing the node." in to_member.body and "Open the case" not in to_member.body
