import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.factories import ClusterFactory, OrganizationFactory, SupportCaseFactory, WorkloadFactory
from workloads.models import CaseEvent, SupportCase
from workloads.support.services import add_comment, open_case, update_case

pytestmark = pytest.mark.django_db
# Plain text on purpose: it must appear verbatim (not HTML-escaped) wherever it is shown.
SECRET = "INTERNAL checkpoint cadence is the real problem"
CASES = reverse("support:list")


def detail(case) -> str:
    return reverse("support:detail", args=[case.pk])


@pytest.fixture
def case(member, org, lead):
    return open_case(
        user=member, organization=org, title="Checkpoint writes stall", description="FSx at 100%", category="storage"
    )


@pytest.fixture
def support_client(lead):
    client = Client()
    client.force_login(lead)
    return client


def test_a_tenant_opens_a_case_from_the_form(member_client, member, org, lead, workload):
    url = reverse("support:create", args=[org.slug])
    assert workload.name in member_client.get(url, {"workload": workload.pk}).text
    response = member_client.post(
        url,
        {"title": "EFA down", "category": "networking", "severity": "s1", "workload": workload.pk, "description": "x"},
    )
    case = SupportCase.objects.get()
    assert response.status_code == 302 and response["Location"] == detail(case)
    assert (case.assignee, case.workload, case.opened_by) == (lead, workload, member)


def test_bad_case_input_is_shown_and_nothing_is_written(member_client, org, other_workload):
    url = reverse("support:create", args=[org.slug])
    response = member_client.post(
        url, {"title": "", "category": "printer", "severity": "s1", "workload": other_workload.pk, "description": "x"}
    )
    assert response.status_code == 400
    assert "This field is required." in response.text and "Select a valid choice" in response.text
    assert not SupportCase.objects.exists()


def test_internal_notes_never_reach_a_tenants_page(member_client, support_client, case, lead):
    add_comment(user=lead, case=case, body="We are looking at the FSx metrics.")
    add_comment(user=lead, case=case, body=SECRET, internal=True)

    tenant = member_client.get(detail(case))
    assert "We are looking at the FSx metrics." in tenant.text
    assert SECRET not in tenant.text and "Internal note" not in tenant.text
    assert 'name="internal"' not in tenant.text or 'type="hidden" name="internal"' in tenant.text
    fragment = member_client.get(detail(case), headers={"HX-Request": "true"})
    assert SECRET not in fragment.text and "<html" not in fragment.text
    polled = member_client.get(detail(case), {"part": "history"}, headers={"HX-Request": "true"})
    assert "We are looking at the FSx metrics." in polled.text and SECRET not in polled.text
    assert 'id="case-history"' in polled.text and "Add comment" not in polled.text

    staff = support_client.get(detail(case))
    assert SECRET in staff.text and "Internal note · staff only" in staff.text


def test_a_tenant_posting_an_internal_note_is_refused(member_client, case):
    response = member_client.post(reverse("support:comment", args=[case.pk]), {"body": "x", "internal": "on"})
    assert response.status_code == 403
    assert case.events.count() == 1


def test_commenting_by_htmx_returns_the_updated_case(member_client, case):
    response = member_client.post(
        reverse("support:comment", args=[case.pk]), {"body": "Still stuck."}, headers={"HX-Request": "true"}
    )
    assert response.status_code == 200
    assert 'id="case-body"' in response.text and "Still stuck." in response.text and "<html" not in response.text


def test_an_empty_comment_is_a_form_error(member_client, case):
    url = reverse("support:comment", args=[case.pk])
    assert member_client.post(url, {"body": "  "}).status_code == 400
    htmx = member_client.post(url, {"body": ""}, headers={"HX-Request": "true"})
    assert htmx.status_code == 200 and "This field is required." in htmx.text  # htmx swaps the errors in
    assert case.events.count() == 1


def test_commenting_on_a_closed_case_says_to_reopen_it(member_client, case, lead):
    update_case(user=lead, case=case, status="closed")
    page = member_client.get(detail(case)).text
    assert "This case is closed. Reopen it to add a comment." in page and "Reopen the case" in page
    response = member_client.post(reverse("support:comment", args=[case.pk]), {"body": "Back again"})
    assert response.status_code == 400
    assert "This case is closed. Reopen it to add a comment." in response.text
    assert not case.events.filter(body="Back again").exists()


def test_reopening_from_the_page(member_client, case, lead):
    update_case(user=lead, case=case, status="closed")
    response = member_client.post(
        reverse("support:update", args=[case.pk]), {"status": "open", "severity": case.severity, "workload": ""}
    )
    assert response.status_code == 302
    case.refresh_from_db()
    assert case.status == "open"
    assert list(case.events.values_list("kind", flat=True)) == ["opened", "status", "status"]


def test_staff_change_status_and_assignee_and_each_change_is_one_event(support_client, case, manager):
    response = support_client.post(
        reverse("support:update", args=[case.pk]),
        {"status": "waiting_on_tenant", "severity": case.severity, "assignee": manager.pk, "comment": "Need logs."},
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 200 and "Need logs." in response.text
    case.refresh_from_db()
    assert (case.status, case.assignee) == ("waiting_on_tenant", manager)
    assert list(case.events.values_list("kind", flat=True)) == ["opened", "status", "assignee", "comment"]


def test_a_tenant_is_not_offered_triage_and_cannot_force_it(member_client, case):
    page = member_client.get(detail(case)).text
    assert 'value="in_progress"' not in page and 'name="assignee"' not in page
    response = member_client.post(
        reverse("support:update", args=[case.pk]), {"status": "in_progress", "severity": case.severity}
    )
    assert response.status_code == 400 and "Select a valid choice" in response.text
    case.refresh_from_db()
    assert case.status == "open"


def test_the_page_shows_time_to_first_response_and_time_open(member_client, case, lead):
    SupportCase.objects.filter(pk=case.pk).update(created_at=case.created_at.replace(year=2020))
    add_comment(user=lead, case=case, body="On it.")
    text = member_client.get(detail(case)).text
    assert "First response" in text and "Time open" in text
    assert "after 6" in text  # six-plus years between the back-dated opening and the reply


def test_a_tenant_lists_its_own_cases_only(member_client, case, other_org):
    theirs = SupportCaseFactory(organization=other_org, title="Their secret case")
    text = member_client.get(CASES).text
    assert case.title in text and theirs.title not in text


def test_the_case_list_shows_active_cases_by_default_and_filters(manager_client, case, lead, other_org):
    done = SupportCaseFactory(organization=other_org, title="Old quota case", status="closed", category="quota")
    text = manager_client.get(CASES).text
    assert case.title in text and done.title not in text
    text = manager_client.get(CASES, {"state": "done", "category": "quota"}).text
    assert done.title in text and case.title not in text
    fragment = manager_client.get(CASES, {"severity": "s3"}, headers={"HX-Request": "true"})
    assert 'id="case-table"' in fragment.text and "<html" not in fragment.text
    assert manager_client.get(CASES, {"severity": "s9"}).status_code == 400


def test_staff_find_the_cases_assigned_to_them(support_client, lead, case, manager, other_org):
    theirs = SupportCaseFactory(organization=other_org, title="Assigned elsewhere", assignee=manager)
    page = support_client.get(CASES).text
    assert f"?assignee={lead.username}" in page
    text = support_client.get(CASES, {"assignee": lead.username}).text
    assert case.title in text and theirs.title not in text


def test_the_cluster_and_workload_filters_tell_rows_of_one_name_apart(manager_client, org, other_org):
    """A cluster made again keeps its name (the demo listed "p5-pretrain-v1" ten times); two orgs may name a
    workload alike. Each option names its organization (and a cluster its id and an end state); none is Django's
    "---------"."""
    gone = ClusterFactory(organization=org, name="p5-pretrain-v1", status="deleted")
    live = ClusterFactory(organization=org, name="p5-pretrain-v1")
    ours, theirs = (
        WorkloadFactory(organization=org, name="pretrain"),
        WorkloadFactory(organization=other_org, name="pretrain"),
    )
    page = manager_client.get(CASES).text
    options = dict(re.findall(r'<option value="(\d+)"[^>]*>([^<]+)</option>', page))
    assert options[str(gone.pk)] == f"p5-pretrain-v1 · {org.name} · #{gone.pk} (Deleted)"
    assert options[str(live.pk)] == f"p5-pretrain-v1 · {org.name} · #{live.pk}"
    assert f"pretrain · {org.name}" in page and f"pretrain · {other_org.name}" in page
    assert ours.pk != theirs.pk and "---------" not in page


def test_the_case_list_runs_a_fixed_number_of_queries(manager_client):
    def grow(count):
        for _ in range(count):
            SupportCaseFactory(organization=OrganizationFactory())

    grow(3)
    with CaptureQueriesContext(connection) as small:
        manager_client.get(CASES)
    grow(25)
    ClusterFactory.create_batch(5)  # the cluster filter names each option's organization: no query per option
    WorkloadFactory.create_batch(5)
    with CaptureQueriesContext(connection) as large:
        manager_client.get(CASES)
    assert len(large) == len(small)


def test_the_case_page_runs_a_fixed_number_of_queries(member_client, member, case, lead):
    add_comment(user=lead, case=case, body="1")
    with CaptureQueriesContext(connection) as small:
        member_client.get(detail(case))
    for n in range(20):
        staff = n % 2 == 0
        add_comment(user=lead if staff else member, case=case, body=str(n), internal=staff and n % 4 == 0)
    with CaptureQueriesContext(connection) as large:
        member_client.get(detail(case))
    assert len(large) == len(small)
    assert CaseEvent.objects.filter(case=case).count() == 22


def test_a_support_engineer_lands_on_their_queue_led_orgs_first_then_severity_then_age(support_client, support):
    from datetime import timedelta

    from django.utils import timezone

    from tests.factories import OrganizationFactory, SupportCaseFactory
    from workloads.support.models import SupportCase

    mine, other = OrganizationFactory(lead_engineer=support), OrganizationFactory()
    now = timezone.now()
    cases = {
        "other-s1": SupportCaseFactory(organization=other, severity="s1"),
        "mine-s3-old": SupportCaseFactory(organization=mine, severity="s3"),
        "mine-s2": SupportCaseFactory(organization=mine, severity="s2"),
        "mine-s3-new": SupportCaseFactory(organization=mine, severity="s3"),
        "mine-done": SupportCaseFactory(organization=mine, severity="s1", status="resolved"),
    }
    for age, name in enumerate(["mine-s3-new", "mine-s2", "mine-s3-old", "other-s1"]):
        SupportCase.objects.filter(pk=cases[name].pk).update(created_at=now - timedelta(days=age))
    home = support_client.get("/")
    assert home.status_code == 302 and home["Location"] == "/support/?sort=queue"
    page = support_client.get(home["Location"])
    order = [case.pk for case in page.context["page"].object_list]
    assert order == [cases[n].pk for n in ("mine-s2", "mine-s3-old", "mine-s3-new", "other-s1")]


@pytest.mark.parametrize("language", ["en", "ja"])
def test_the_staff_buttons_of_the_case_list_each_say_something_different(support_client, language):
    """In Japanese "My queue" and "Assigned to me" both read 自分の担当: two buttons, one label."""
    support_client.cookies["django_language"] = language
    page = support_client.get(reverse("support:list")).text
    head = page.split('<div class="actions">')[1].split("</div>")[0]
    labels = re.findall(r'<a class="button" href="[^"]*">([^<]+)</a>', head)
    assert len(labels) == 3 and len(set(labels)) == 3, labels
