"""The weekly digest: due from Monday 09:00 program time, sent once per week however often beat runs it."""

from datetime import date, timedelta

import pytest
import time_machine
from django.core import mail
from django.core.management import call_command

from tenants.models import StaffRole
from tests.factories import StaffRoleFactory, SupportCaseFactory
from tests.usage.conftest import jst
from workloads.models import DigestSent, NodeInterval, SupportCase, UsageDay
from workloads.usage import digest
from workloads.usage.tasks import send_weekly_digest

MONDAY = jst(2027, 3, 15, 9)  # the Monday after the hand-computed week (2027-W10)


@pytest.fixture
def cases(week, org_a, org_b):
    SupportCaseFactory(organization=org_a, severity=SupportCase.Severity.S1, title="EFA down on 4 nodes")
    SupportCaseFactory(organization=org_b, severity=SupportCase.Severity.S3, title="Quota question")


def test_nothing_is_sent_before_monday_nine_in_tokyo(cases, manager):
    with time_machine.travel(MONDAY - timedelta(minutes=1), tick=False):
        assert digest.send_weekly_digest() == 0
    assert mail.outbox == [] and not DigestSent.objects.exists()


def test_sent_once_to_every_program_manager_however_often_it_runs(cases, manager):
    second = StaffRoleFactory(role=StaffRole.Role.PROGRAM_MANAGER).user
    StaffRoleFactory(role=StaffRole.Role.SUPPORT_ENGINEER)  # not a recipient
    for moment in (MONDAY, MONDAY + timedelta(minutes=5), MONDAY + timedelta(hours=30)):
        with time_machine.travel(moment, tick=False):
            for _ in range(3):
                send_weekly_digest.apply()
    assert sorted(m.to[0] for m in mail.outbox) == sorted([manager.email, second.email])
    message = mail.outbox[0]
    assert message.subject == "[FM Program] Weekly usage 2027-W10"
    # Last week's table (the hand-computed figures), the idle organization, the open S1/S2 cases only.
    assert "Alpha Lab | 792.0 | 144.5 | 18.2%" in message.body
    assert "Beta Lab | 336.0 | 168.0 | 50.0%" in message.body
    assert "Idle (under 50.0% of the allocation ran): Alpha Lab" in message.body
    assert "EFA down on 4 nodes" in message.body and "Quota question" not in message.body
    assert "/program/usage/?period=2027-W10" in message.body
    html = message.alternatives[0]
    assert html.mimetype == "text/html" and "Alpha Lab" in html.content
    assert list(DigestSent.objects.values_list("week_start", "recipients")) == [(date(2027, 3, 8), 2)]


def test_a_missed_monday_still_sends_later_in_the_week(cases, manager):
    with time_machine.travel(jst(2027, 3, 17, 3), tick=False):
        assert digest.send_weekly_digest() == 1
    assert DigestSent.objects.get().week_start == date(2027, 3, 8)


def test_a_failed_send_gives_the_claim_back_so_the_retry_sends(cases, manager, monkeypatch):
    def refuse(self, messages):
        raise ConnectionRefusedError("SMTP relay down")

    monkeypatch.setattr("django.core.mail.backends.locmem.EmailBackend.send_messages", refuse)
    with time_machine.travel(MONDAY, tick=False):
        with pytest.raises(ConnectionRefusedError):
            digest.send_weekly_digest()
        assert not DigestSent.objects.exists()
        monkeypatch.undo()
        assert digest.send_weekly_digest() == 1
        assert digest.send_weekly_digest() == 0
    assert len(mail.outbox) == 1


@pytest.mark.django_db
def test_the_demo_usage_loads_once_with_an_idle_organization():
    call_command("load_demo", "--start", (date.today() - timedelta(days=60)).isoformat())
    call_command("load_demo_usage")
    runs, days = NodeInterval.objects.count(), UsageDay.objects.count()
    assert runs > 100 and days > 100
    call_command("load_demo_usage")
    assert (NodeInterval.objects.count(), UsageDay.objects.count()) == (runs, days)
    per_org = {}
    for row in UsageDay.objects.values("organization__slug", "allocated_microseconds", "running_microseconds"):
        allocated, running = per_org.get(row["organization__slug"], (0, 0))
        per_org[row["organization__slug"]] = (
            allocated + row["allocated_microseconds"],
            running + row["running_microseconds"],
        )
    utilization = {slug: running / allocated for slug, (allocated, running) in per_org.items() if allocated}
    assert min(utilization.values()) < 0.25 < 0.6 < max(utilization.values())  # one idle, most busy
