from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core.exceptions import PermissionDenied, ValidationError

from tests.factories import StaffRoleFactory
from workloads.models import CaseEvent, SupportCase
from workloads.support import services
from workloads.support.services import add_comment, update_case

pytestmark = pytest.mark.django_db
T0 = datetime(2027, 3, 1, 0, 0, tzinfo=UTC)


def open_case(user, org, **extra) -> SupportCase:
    data = {"title": "EFA errors on 4 nodes", "description": "fi_getinfo fails", "category": "networking"}
    return services.open_case(user=user, organization=org, **{**data, **extra})


def kinds(case) -> list[str]:
    return list(case.events.order_by("created_at", "pk").values_list("kind", flat=True))


def test_a_case_goes_to_the_orgs_lead_engineer_and_starts_its_history(member, org, lead):
    case = open_case(member, org, severity="s1")

    assert (case.assignee, case.opened_by, case.status, case.severity) == (lead, member, "open", "s1")
    assert not case.opened_by_staff
    [opened] = case.events.all()
    assert (opened.kind, opened.actor, opened.body, opened.internal) == ("opened", member, "fi_getinfo fails", False)


def test_without_a_lead_engineer_the_case_is_unassigned(member, org):
    assert open_case(member, org).assignee is None


def test_time_to_first_response_is_the_first_staff_reply_the_tenant_can_read(member, org, lead):
    with time_machine.travel(T0, tick=False):
        case = open_case(member, org)
    with time_machine.travel(T0 + timedelta(minutes=10), tick=False):
        add_comment(user=member, case=case, body="Any news?")
    with time_machine.travel(T0 + timedelta(minutes=20), tick=False):
        add_comment(user=lead, case=case, body="Checking the EFA counters.", internal=True)
    case.refresh_from_db()
    assert case.first_response_at is None  # neither the tenant nor an internal note is a response
    with time_machine.travel(T0 + timedelta(minutes=45), tick=False):
        add_comment(user=lead, case=case, body="Two nodes have a bad EFA card; replacing them.")
    with time_machine.travel(T0 + timedelta(hours=3), tick=False):
        add_comment(user=lead, case=case, body="Replaced.")
    case.refresh_from_db()
    assert case.first_response_at - case.created_at == timedelta(minutes=45)


def test_an_internal_note_does_not_move_the_last_update_a_tenant_sees(member, org, lead):
    with time_machine.travel(T0, tick=False):
        case = open_case(member, org)
    with time_machine.travel(T0 + timedelta(days=2), tick=False):
        add_comment(user=lead, case=case, body="Suspect the tenant's NCCL version.", internal=True)
    case.refresh_from_db()
    assert case.updated_at == T0


def test_a_tenant_cannot_add_an_internal_note(member, org):
    case = open_case(member, org)
    with pytest.raises(PermissionDenied):
        add_comment(user=member, case=case, body="psst", internal=True)
    assert kinds(case) == ["opened"]


def test_commenting_on_a_closed_case_requires_reopening_it(member, org, lead):
    case = open_case(member, org)
    update_case(user=lead, case=case, status="closed", comment="Fixed by the node replacement.")

    with pytest.raises(ValidationError) as error:
        add_comment(user=member, case=case, body="It is back!")
    assert error.value.message_dict == {"body": ["This case is closed. Reopen it to add a comment."]}

    update_case(user=member, case=case, status="open")
    add_comment(user=member, case=case, body="It is back!")
    case.refresh_from_db()
    assert case.status == "open" and case.resolved_at is None
    assert kinds(case) == ["opened", "status", "comment", "status", "comment"]


def test_a_closed_case_accepts_no_other_change_until_reopened(member, org, lead, workload):
    case = open_case(member, org)
    update_case(user=lead, case=case, status="closed")
    for change in ({"severity": "s1"}, {"workload": workload}, {"status": "resolved"}, {"comment": "hi"}):
        with pytest.raises(ValidationError):
            update_case(user=lead, case=case, **change)
    assert kinds(case) == ["opened", "status"]


def test_reopening_needs_a_finished_case(member, org, lead):
    case = open_case(member, org)
    update_case(user=lead, case=case, status="in_progress")
    with pytest.raises(ValidationError) as error:
        update_case(user=member, case=case, status="open")
    assert "Only a resolved or closed case can be reopened." in error.value.message_dict["status"]


def test_time_open_stops_when_resolved_and_runs_again_when_reopened(member, org, lead):
    with time_machine.travel(T0, tick=False):
        case = open_case(member, org)
    with time_machine.travel(T0 + timedelta(hours=5), tick=False):
        update_case(user=lead, case=case, status="resolved")
    case.refresh_from_db()
    assert case.open_until - case.created_at == timedelta(hours=5)
    with time_machine.travel(T0 + timedelta(days=1), tick=False):
        update_case(user=member, case=case, status="open")
        case.refresh_from_db()
        assert case.open_until - case.created_at == timedelta(days=1)


def test_tenants_resolve_close_and_reopen_but_only_staff_triage_and_assign(member, org, lead):
    case = open_case(member, org)
    with pytest.raises(PermissionDenied):
        update_case(user=member, case=case, status="in_progress")
    with pytest.raises(PermissionDenied):
        update_case(user=member, case=case, assignee=lead)
    update_case(user=member, case=case, severity="s1")
    other_engineer = StaffRoleFactory(role="support_engineer").user
    update_case(user=lead, case=case, status="in_progress", assignee=other_engineer)
    case.refresh_from_db()
    assert (case.status, case.assignee, case.severity) == ("in_progress", other_engineer, "s1")
    assignee_event = case.events.get(kind="assignee")
    assert (assignee_event.old_value, assignee_event.new_value) == (lead.username, other_engineer.username)


def test_only_program_staff_can_be_assigned(member, org, lead, colleague):
    case = open_case(member, org)
    with pytest.raises(ValidationError) as error:
        update_case(user=lead, case=case, assignee=colleague)
    assert "program staff" in error.value.message_dict["assignee"][0]


def test_a_tenant_reply_puts_a_waiting_case_back_in_progress(member, org, lead):
    case = open_case(member, org)
    update_case(user=lead, case=case, status="waiting_on_tenant", comment="Which NCCL version?")
    add_comment(user=member, case=case, body="2.21.5")
    case.refresh_from_db()
    assert case.status == "in_progress"
    assert case.events.filter(kind="status").last().actor == member


def test_linking_another_orgs_workload_is_refused_and_writes_nothing(member, org, lead, other_workload, workload):
    with pytest.raises(ValidationError) as error:
        open_case(member, org, workload=other_workload)
    assert error.value.message_dict == {"workload": ["This workload belongs to another organization."]}
    assert not SupportCase.objects.exists()

    case = open_case(member, org, workload=workload)
    with pytest.raises(ValidationError):
        update_case(user=lead, case=case, workload=other_workload, severity="s1")
    case.refresh_from_db()
    assert case.workload == workload and case.severity == "s3" and kinds(case) == ["opened"]


def test_unknown_category_or_severity_is_a_field_error(member, org):
    with pytest.raises(ValidationError) as error:
        open_case(member, org, category="printer", severity="s9")
    assert set(error.value.message_dict) == {"category", "severity"}
    assert not SupportCase.objects.exists()


def test_case_history_is_append_only(member, org):
    event = open_case(member, org).events.get()
    event.body = "rewritten"
    with pytest.raises(ValueError, match="append-only"):
        event.save()
    assert CaseEvent.objects.get().body == "fi_getinfo fails"


# --- The portal itself as the actor (health incidents, failed validations) -------------------------------------


def test_the_portal_opens_a_case_as_the_system_not_as_a_person(
    member, org, lead, client, django_capture_on_commit_callbacks
):
    from django.core import mail

    from tenants.access import SYSTEM

    with django_capture_on_commit_callbacks(execute=True):
        case = open_case(SYSTEM, org, severity="s2", category="node_health", title="XID 79 on i-0abc GPU 3")

    assert (case.opened_by, case.opened_by_staff, case.assignee, case.severity) == (None, False, lead, "s2")
    [opened] = case.events.all()
    assert (opened.kind, opened.actor) == ("opened", None)
    # Nobody of the org opened it, so the org's members hear about it (and the lead engineer, as for any case);
    # they read who opened it as "system".
    assert {member.email, lead.email} <= {address for message in mail.outbox for address in message.to}
    client.force_login(member)
    page = client.get(f"/support/{case.pk}/").text
    assert "<strong>system</strong>" in page and "XID 79 on i-0abc GPU 3" in page


def test_a_system_comment_is_neither_the_teams_reply_nor_the_tenants_answer(member, org, lead):
    from tenants.access import SYSTEM

    case = open_case(member, org)
    services.update_case(user=lead, case=case, status="waiting_on_tenant")
    add_comment(user=SYSTEM, case=case, body="Condition cleared: XID 79 no longer reported.")
    case.refresh_from_db()

    assert case.first_response_at is None  # the wait for a person goes on
    assert case.status == "waiting_on_tenant"  # still the tenant's turn
    assert case.events.latest("pk").actor is None


def test_the_system_actor_cannot_triage(member, org):
    from tenants.access import SYSTEM

    case = open_case(member, org)
    with pytest.raises(PermissionDenied):
        update_case(user=SYSTEM, case=case, status="closed")
    case.refresh_from_db()
    assert case.status == "open"
