import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from portal.periods import this_week
from tests.factories import MembershipFactory, OrganizationFactory, SupportCaseFactory, WorkloadFactory
from tests.workloads.conftest import WORKLOAD_INPUT
from workloads.models import ActionItem, CaseEvent, ReviewMeeting, SupportCase, Workload, WorkloadChange
from workloads.review.services import save_review_meeting
from workloads.support.services import add_comment, open_case

pytestmark = pytest.mark.django_db
SECRET = "INTERNAL the tenant keeps resubmitting the same broken job"


@pytest.fixture
def manager_api(manager):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(manager)
    return client


@pytest.fixture
def lead_api(lead):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(lead)
    return client


def body(**changes) -> dict:
    data = {k: v for k, v in WORKLOAD_INPUT.items() if v is not None}
    return {**data, **changes}


# --- workloads -----------------------------------------------------------------------------------


def test_a_tenant_lists_its_own_workloads_and_staff_list_all(member_api, manager_api, workload, other_workload):
    assert [w["name"] for w in member_api.get("/api/v1/workloads/").json()["results"]] == [workload.name]
    assert manager_api.get("/api/v1/workloads/").json()["count"] == 2
    assert member_api.get(f"/api/v1/workloads/{other_workload.pk}/").status_code == 404


def test_creating_defaults_to_the_callers_only_org(member_api, member, org):
    response = member_api.post("/api/v1/workloads/", body(), format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["organization"] == org.slug and response.json()["world_size"] == 1024
    workload = Workload.objects.get()
    assert workload.created_by == member and workload.changes.get().kind == "created"


def test_creating_in_another_org_is_404_and_an_ambiguous_org_is_400(member_api, member, other_org):
    assert member_api.post("/api/v1/workloads/", body(organization=other_org.slug), format="json").status_code == 404
    MembershipFactory(user=member)  # now in two orgs
    response = member_api.post("/api/v1/workloads/", body(), format="json")
    assert response.status_code == 400 and "organization" in response.json()
    assert not Workload.objects.exists()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"framework": "tensorflow"}, "framework"),
        ({"parameter_count": -1}, "parameter_count"),
        ({"target_tokens": -100}, "target_tokens"),
        ({"architecture": "moe", "parameter_count": 10, "active_parameter_count": 20}, "active_parameter_count"),
        ({"pipeline_parallel": 0}, "pipeline_parallel"),
        ({"tensor_parallel": 10**9}, "tensor_parallel"),
        ({"parameter_count": 10**15}, "parameter_count"),
        ({"target_tokens": 10**17}, "target_tokens"),
    ],
)
def test_bad_workload_input_is_400_with_the_field_and_writes_nothing(member_api, change, field):
    response = member_api.post("/api/v1/workloads/", body(**change), format="json")
    assert response.status_code == 400
    assert field in response.json(), response.json()
    assert not Workload.objects.exists() and not WorkloadChange.objects.exists()


@pytest.mark.parametrize("new_case", [{}, {"title": ["a"], "category": "other", "severity": "s4"}])
def test_a_malformed_new_case_is_400(manager_api, manager, org, new_case):
    meeting, _created = save_review_meeting(user=manager, week_start=this_week())
    body = {"meeting": meeting.pk, "organization": org.slug, "text": "x", "new_case": new_case}
    response = manager_api.post("/api/v1/action-items/", body, format="json")
    assert response.status_code == 400 and "new_case" in response.json()
    assert not ActionItem.objects.exists()


def test_a_size_beyond_any_model_is_refused_in_words(member_api):
    response = member_api.post("/api/v1/workloads/", body(parameter_count=2**63), format="json")
    assert response.status_code == 400
    assert response.json()["parameter_count"] == ["At most 100 trillion parameters."]


def test_linking_another_orgs_allocation_looks_like_linking_none_at_all(member_api, other_allocation):
    response = member_api.post("/api/v1/workloads/", body(allocation=other_allocation.pk), format="json")
    missing = member_api.post("/api/v1/workloads/", body(allocation=999999), format="json")
    assert response.status_code == missing.status_code == 400
    assert response.json()["allocation"] == [f'Invalid pk "{other_allocation.pk}" - object does not exist.']
    assert not Workload.objects.exists()


def test_staff_read_but_cannot_write_workloads(manager_api, org, workload):
    assert manager_api.post("/api/v1/workloads/", body(organization=org.slug), format="json").status_code == 403
    response = manager_api.patch(f"/api/v1/workloads/{workload.pk}/", {"status": "running"}, format="json")
    assert response.status_code == 403
    assert not workload.changes.exists()


def test_patch_records_history_and_the_history_endpoint_lists_it(member_api, member, workload, allocation):
    response = member_api.patch(
        f"/api/v1/workloads/{workload.pk}/", {"status": "running", "allocation": allocation.pk}, format="json"
    )
    assert response.status_code == 200 and response.json()["status"] == "running"
    history = member_api.get(f"/api/v1/workloads/{workload.pk}/history/").json()
    assert {(c["field"], c["old_value"], c["actor"]) for c in history["results"]} == {
        ("status", "planned", member.username),
        ("allocation", "", member.username),
    }


def test_a_workload_cannot_move_to_another_org(member_api, member, workload):
    second = MembershipFactory(user=member).organization
    response = member_api.patch(f"/api/v1/workloads/{workload.pk}/", {"organization": second.slug}, format="json")
    assert response.status_code == 400
    workload.refresh_from_db()
    assert workload.organization.slug != second.slug


def test_another_orgs_workload_cannot_be_changed_or_its_history_read(member_api, other_workload):
    assert (
        member_api.patch(f"/api/v1/workloads/{other_workload.pk}/", {"status": "paused"}, format="json").status_code
        == 404
    )
    assert member_api.get(f"/api/v1/workloads/{other_workload.pk}/history/").status_code == 404


def test_workload_filters_and_ordering(manager_api, org, other_org):
    WorkloadFactory(organization=org, name="b-run", framework="jax", parameter_count=70 * 10**9)
    WorkloadFactory(organization=org, name="a-run", framework="jax", parameter_count=8 * 10**9)
    WorkloadFactory(organization=other_org, name="c-run", framework="verl")
    names = lambda params: [w["name"] for w in manager_api.get("/api/v1/workloads/", params).json()["results"]]  # noqa: E731
    assert names({"framework": "jax", "ordering": "-parameter_count"}) == ["b-run", "a-run"]
    assert names({"organization": other_org.slug}) == ["c-run"]
    assert manager_api.get("/api/v1/workloads/", {"framework": "tensorflow"}).status_code == 400


# --- support cases -------------------------------------------------------------------------------


@pytest.fixture
def case(member, org, lead):
    case = open_case(
        user=member,
        organization=org,
        title="Node replacement",
        description="i-0abc is unhealthy",
        category="node_health",
    )
    add_comment(user=lead, case=case, body="Replacing i-0abc now.")
    add_comment(user=lead, case=case, body=SECRET, internal=True)
    return case


def test_internal_notes_never_reach_a_tenant_through_the_api(member_api, lead_api, case):
    listing = member_api.get("/api/v1/support-cases/")
    detail = member_api.get(f"/api/v1/support-cases/{case.pk}/")
    events = member_api.get(f"/api/v1/support-cases/{case.pk}/events/")
    for response in (listing, detail, events):
        assert response.status_code == 200
        assert SECRET not in response.content.decode()
    assert [e["kind"] for e in detail.json()["events"]] == ["opened", "comment"]
    assert events.json()["count"] == 2

    staff_events = lead_api.get(f"/api/v1/support-cases/{case.pk}/events/").json()
    assert [e["body"] for e in staff_events["results"] if e["internal"]] == [SECRET]


def test_a_tenant_cannot_read_or_comment_on_another_orgs_case(outsider, api_client, case):
    api_client.force_authenticate(outsider)
    assert api_client.get(f"/api/v1/support-cases/{case.pk}/").status_code == 404
    assert api_client.get(f"/api/v1/support-cases/{case.pk}/events/").status_code == 404
    response = api_client.post(f"/api/v1/support-cases/{case.pk}/events/", {"body": "hi"}, format="json")
    assert response.status_code == 404
    assert api_client.patch(f"/api/v1/support-cases/{case.pk}/", {"status": "closed"}, format="json").status_code == 404
    assert case.events.count() == 3


def test_a_tenant_cannot_link_another_orgs_workload_to_its_case(member_api, case, other_workload):
    response = member_api.patch(f"/api/v1/support-cases/{case.pk}/", {"workload": other_workload.pk}, format="json")
    assert response.status_code == 400
    assert "object does not exist" in response.json()["workload"][0]
    created = member_api.post(
        "/api/v1/support-cases/",
        {"title": "x", "description": "y", "category": "other", "workload": other_workload.pk},
        format="json",
    )
    assert created.status_code == 400
    case.refresh_from_db()
    assert case.workload is None and SupportCase.objects.count() == 1


def test_opening_a_case_by_api_assigns_the_lead_engineer(member_api, lead, org, workload):
    response = member_api.post(
        "/api/v1/support-cases/",
        {
            "title": "Quota",
            "description": "Need more EBS",
            "category": "quota",
            "severity": "s2",
            "workload": workload.pk,
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    data = response.json()
    assert (data["organization"], data["assignee"], data["status"], data["workload"]) == (
        org.slug,
        lead.username,
        "open",
        workload.pk,
    )
    assert data["time_to_first_response"] is None and data["time_open"] >= 0


def test_bad_case_input_is_400_and_writes_nothing(member_api, lead):
    response = member_api.post(
        "/api/v1/support-cases/",
        {"title": "", "description": "y", "category": "printer", "severity": "s7"},
        format="json",
    )
    assert response.status_code == 400
    assert {"title", "category", "severity"} <= set(response.json())
    response = member_api.post(
        "/api/v1/support-cases/",
        {"title": "x", "description": "y", "category": "other", "assignee": lead.username},
        format="json",
    )
    assert response.status_code == 403  # only staff choose the assignee
    assert not SupportCase.objects.exists()


def test_commenting_and_the_closed_case_rule(member_api, lead_api, case):
    url = f"/api/v1/support-cases/{case.pk}/events/"
    created = member_api.post(url, {"body": "Thanks!"}, format="json")
    assert created.status_code == 201 and created.json()["kind"] == "comment"
    assert member_api.post(url, {"body": "psst", "internal": True}, format="json").status_code == 403
    assert member_api.post(url, {"body": ""}, format="json").status_code == 400

    assert lead_api.patch(f"/api/v1/support-cases/{case.pk}/", {"status": "closed"}, format="json").status_code == 200
    refused = member_api.post(url, {"body": "Again"}, format="json")
    assert refused.status_code == 400
    assert refused.json() == {"body": ["This case is closed. Reopen it to add a comment."]}
    reopened = member_api.patch(
        f"/api/v1/support-cases/{case.pk}/", {"status": "open", "comment": "Again"}, format="json"
    )
    assert reopened.status_code == 200 and reopened.json()["status"] == "open"
    assert [e["body"] for e in member_api.get(url).json()["results"]][-1] == "Again"


def test_a_case_update_rejects_fields_that_do_not_change(member_api, case):
    response = member_api.patch(f"/api/v1/support-cases/{case.pk}/", {"title": "Renamed"}, format="json")
    assert response.status_code == 400 and "title" in response.json()


def test_case_filters(manager_api, case, other_org):
    SupportCaseFactory(organization=other_org, status="closed", severity="s1")
    ids = lambda params: [c["id"] for c in manager_api.get("/api/v1/support-cases/", params).json()["results"]]  # noqa: E731
    assert ids({"state": "active"}) == [case.pk]
    assert len(ids({"severity": "s1", "state": "done"})) == 1
    assert ids({"organization": case.organization.slug, "category": "node_health"}) == [case.pk]


# --- weekly review -------------------------------------------------------------------------------


def test_review_meetings_are_for_staff_only(member_api, manager):
    meeting, _created = save_review_meeting(user=manager, week_start=this_week())
    assert member_api.get("/api/v1/review-meetings/").status_code == 403
    assert member_api.get(f"/api/v1/review-meetings/{meeting.pk}/").status_code == 403
    assert member_api.post("/api/v1/review-meetings/", {"week": "2027-W05"}, format="json").status_code == 403
    assert member_api.get("/api/v1/action-items/").status_code == 403


def test_staff_record_a_meeting_by_week(manager_api, manager, lead):
    first = manager_api.post(
        "/api/v1/review-meetings/",
        {"week": "2027-W05", "minutes": "All good.", "attendees": [lead.username]},
        format="json",
    )
    assert first.status_code == 201, first.json()
    assert (first.json()["week"], first.json()["week_start"]) == ("2027-W05", "2027-02-01")
    again = manager_api.post("/api/v1/review-meetings/", {"week": "2027-W05", "minutes": "Updated."}, format="json")
    assert again.status_code == 200 and ReviewMeeting.objects.get().minutes == "Updated."
    assert again.json()["attendees"] == [lead.username], "a field left out of the request keeps its value"
    form_encoded = manager_api.post("/api/v1/review-meetings/", {"week": "2027-W05", "minutes": "Form."})
    assert form_encoded.status_code == 200 and form_encoded.json()["attendees"] == [lead.username]
    assert manager_api.post("/api/v1/review-meetings/", {"week": "2027-05"}, format="json").status_code == 400
    patched = manager_api.patch(f"/api/v1/review-meetings/{first.json()['id']}/", {"minutes": "Final."}, format="json")
    assert patched.status_code == 200 and patched.json()["minutes"] == "Final."


def test_meeting_attendees_must_be_program_staff(manager_api, member):
    response = manager_api.post(
        "/api/v1/review-meetings/", {"week": "2027-W05", "attendees": [member.username]}, format="json"
    )
    assert response.status_code == 400 and "attendees" in response.json()


def test_an_action_item_can_open_a_case_the_tenant_sees_without_the_review(manager_api, manager, member_api, org):
    meeting, _created = save_review_meeting(user=manager, week_start=this_week())
    response = manager_api.post(
        "/api/v1/action-items/",
        {
            "meeting": meeting.pk,
            "text": "Check the FSx throughput with the tenant",
            "organization": org.slug,
            "new_case": {"title": "FSx throughput review", "category": "storage", "severity": "s3"},
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    case = SupportCase.objects.get()
    assert response.json()["case"] == case.pk and case.organization == org
    link = case.events.get(kind=CaseEvent.Kind.LINKED)
    assert link.internal and "weekly review" in link.new_value
    tenant_events = member_api.get(f"/api/v1/support-cases/{case.pk}/events/").json()["results"]
    assert [e["kind"] for e in tenant_events] == ["opened"]

    done = manager_api.patch(f"/api/v1/action-items/{response.json()['id']}/", {"status": "done"}, format="json")
    assert done.status_code == 200 and done.json()["status"] == "done" and done.json()["done_by"] == manager.username
    assert (
        manager_api.patch(f"/api/v1/action-items/{response.json()['id']}/", {"text": "x"}, format="json").status_code
        == 400
    )


def test_an_action_item_cannot_link_a_case_of_another_org(manager_api, manager, org, other_org):
    meeting, _created = save_review_meeting(user=manager, week_start=this_week())
    theirs = SupportCaseFactory(organization=other_org)
    response = manager_api.post(
        "/api/v1/action-items/",
        {"meeting": meeting.pk, "text": "Follow up", "organization": org.slug, "case": theirs.pk},
        format="json",
    )
    assert response.status_code == 400 and "case" in response.json()
    assert not ActionItem.objects.exists()


# --- schema and query counts ---------------------------------------------------------------------


def test_the_openapi_schema_documents_the_endpoints_and_their_filters(member_api):
    schema = member_api.get("/api/schema/?format=json").json()
    paths = schema["paths"]
    for path in (
        "/api/v1/workloads/",
        "/api/v1/workloads/{id}/history/",
        "/api/v1/support-cases/",
        "/api/v1/support-cases/{id}/events/",
        "/api/v1/review-meetings/",
        "/api/v1/action-items/",
    ):
        assert path in paths, path
    workload_params = {p["name"] for p in paths["/api/v1/workloads/"]["get"]["parameters"]}
    assert {"organization", "framework", "cluster_type", "status", "phase", "ordering", "page"} <= workload_params
    case_params = {p["name"] for p in paths["/api/v1/support-cases/"]["get"]["parameters"]}
    assert {"organization", "state", "status", "severity", "category", "assignee", "ordering", "page"} <= case_params
    assert "post" in paths["/api/v1/support-cases/{id}/events/"]


@pytest.mark.parametrize("url", ["/api/v1/workloads/", "/api/v1/support-cases/"])
def test_api_lists_run_a_fixed_number_of_queries(manager_api, url):
    def grow(count):
        for _ in range(count):
            org = OrganizationFactory()
            WorkloadFactory(organization=org)
            SupportCaseFactory(organization=org)

    grow(2)
    with CaptureQueriesContext(connection) as small:
        assert manager_api.get(url).status_code == 200
    grow(15)
    with CaptureQueriesContext(connection) as large:
        manager_api.get(url)
    assert len(large) == len(small)


def test_a_workload_with_its_size_in_billions_is_400_saying_the_unit(member_api):
    response = member_api.post("/api/v1/workloads/", body(parameter_count=13), format="json")
    assert response.status_code == 400
    assert response.json()["parameter_count"] == [
        "At least 1,000,000 parameters: the count is in parameters, not billions. Did you mean 13,000,000,000?"
    ]
    response = member_api.post("/api/v1/workloads/", body(target_tokens=300), format="json")
    assert response.status_code == 400
    assert "Did you mean 300,000,000,000?" in response.json()["target_tokens"][0]


# --- values of the schema's type, never coerced (portal.serializers) ----------------------------------------------


def test_a_number_for_a_text_field_is_a_400_not_stored_as_text(manager_api):
    response = manager_api.post("/api/v1/review-meetings/", {"week": "2027-W05", "minutes": 0}, format="json")
    assert response.status_code == 400 and response.json() == {"minutes": ["Not a valid string."]}
    assert not ReviewMeeting.objects.exists()


@pytest.mark.parametrize("value", ["0", "1", "yes", "on", ""])
def test_a_boolean_in_a_form_is_true_or_false(lead_api, case, value):
    url = f"/api/v1/support-cases/{case.pk}/events/"
    response = lead_api.post(url, {"body": "note", "internal": value}, format="multipart")
    assert response.status_code == 400 and response.json() == {"internal": ["Must be a valid boolean."]}
    assert lead_api.post(url, {"body": "note", "internal": "true"}, format="multipart").json()["internal"] is True
    assert lead_api.post(url, {"body": "note", "internal": 0}, format="json").status_code == 400  # JSON: true/false


def test_an_empty_slug_is_a_400_and_null_says_none(lead_api, manager_api, manager, case):
    response = lead_api.patch(f"/api/v1/support-cases/{case.pk}/", {"assignee": ""}, format="json")
    assert response.status_code == 400 and response.json() == {"assignee": ["This field may not be blank."]}
    assert lead_api.patch(f"/api/v1/support-cases/{case.pk}/", {"assignee": None}, format="json").status_code == 200
    meeting, _created = save_review_meeting(user=manager, week_start=this_week())
    body = {"meeting": meeting.pk, "organization": "", "text": "x"}
    response = manager_api.post("/api/v1/action-items/", body, format="json")
    assert response.status_code == 400 and "organization" in response.json()
    assert not ActionItem.objects.exists()
