"""The outcomes API records what the pages record, with the pages' figures: milestones and where each stands,
deliverables, budgets against spend with the forecast, the funding body's reports. Each reader's own: another
organization's object is a 404, a viewer's write a 403, a member cannot set a milestone or a budget.

Figures by hand. Budget (conftest.py's spending, on Monday Feb 15 at 12:00, as test_budget.py): spent $36,700;
forecast $36,700 + $1,000 × 135.5 days = $172,200, range $104,450 – $307,700. A budget of ¥15,000,000 at 150 yen a
dollar is $100,000: 36.7 % spent, the forecast 172.2 % of it. Milestone: the run trained 600 B of 1 T tokens, 50 B in
the last 7 days, so the 400 B left take 8 weeks: Apr 12 at 12:00 (as test_milestones.py)."""

from datetime import datetime

import pytest
import time_machine
from rest_framework.test import APIClient

from tenants.models import Membership
from tests.factories import DeliverableFactory, MembershipFactory, MilestoneFactory, ReportFactory
from tests.outcomes.conftest import NOW, USD, B
from workloads.outcomes.models import Budget, Deliverable, Milestone


@pytest.fixture(autouse=True)
def frozen():
    with time_machine.travel(NOW, tick=False):
        yield


def api_as(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


# --- Milestones ------------------------------------------------------------------------------------------------


def test_a_manager_sets_a_measured_milestone_and_everyone_reads_where_it_stands(org, member, manager, trained):
    created = api_as(manager).post(
        "/api/v1/milestones/",
        {"organization": org.slug, "title": "Pretrain 13B on 1 T tokens", "due_on": "2027-04-12",
         "workload": trained.pk, "training_tokens": 1000 * B},
        format="json",
    )  # fmt: skip
    assert created.status_code == 201, created.json()
    body = api_as(member).get(f"/api/v1/milestones/{created.json()['id']}/").json()
    assert (body["organization"], body["status"], body["state"]) == (org.slug, "open", "on_track")
    assert (body["tokens_trained"], body["training_tokens"], body["projected_on"]) == (600 * B, 1000 * B, "2027-04-12")
    assert body["created_by"] == manager.username

    # A day earlier, the same rate is late: at risk (the list reads the same states).
    late = api_as(manager).patch(f"/api/v1/milestones/{body['id']}/", {"due_on": "2027-04-11"}, format="json")
    assert late.status_code == 200 and late.json()["state"] == "at_risk"
    listed = api_as(member).get("/api/v1/milestones/", {"state": "at_risk"}).json()
    assert [m["id"] for m in listed["results"]] == [body["id"]]
    assert api_as(member).get("/api/v1/milestones/", {"state": "on_track"}).json()["count"] == 0


def test_milestone_filters_by_organization_status_and_due_range(org, other_org, member, manager):
    march = MilestoneFactory(organization=org, title="Release", due_on=datetime(2027, 3, 31).date())
    MilestoneFactory(organization=org, title="Paper", due_on=datetime(2027, 5, 31).date())
    MilestoneFactory(organization=other_org, due_on=datetime(2027, 3, 31).date())
    in_march = api_as(member).get("/api/v1/milestones/", {"due_from": "2027-03-01", "due_to": "2027-03-31"}).json()
    assert [m["id"] for m in in_march["results"]] == [march.pk]  # not the other organization's
    staff = api_as(manager).get("/api/v1/milestones/", {"organization": other_org.slug, "status": "open"}).json()
    assert staff["count"] == 1 and staff["results"][0]["organization"] == other_org.slug


def test_a_measured_milestone_names_both_its_workload_and_tokens(org, manager, trained):
    response = api_as(manager).post(
        "/api/v1/milestones/",
        {"organization": org.slug, "title": "Pretrain", "due_on": "2027-04-12", "workload": trained.pk},
        format="json",
    )
    assert response.status_code == 400 and "training_tokens" in response.json()  # the API's name, not the model's


def test_reported_confirmed_or_returned_through_the_actions(org, member, support, manager):
    milestone = MilestoneFactory(organization=org)
    url = f"/api/v1/milestones/{milestone.pk}/"
    assert api_as(member).post(f"{url}report/", {"evidence": " "}, format="json").status_code == 400
    reported = api_as(member).post(f"{url}report/", {"evidence": "https://huggingface.co/alpha/a"}, format="json")
    assert reported.status_code == 200
    assert (reported.json()["status"], reported.json()["state"]) == ("reported", "reported")
    assert reported.json()["reported_by"] == member.username

    assert api_as(member).post(f"{url}decide/", {"decision": "confirm"}, format="json").status_code == 403
    no_reason = api_as(support).post(f"{url}decide/", {"decision": "return"}, format="json")
    assert no_reason.status_code == 400 and "comment" in no_reason.json()
    returned = api_as(support).post(f"{url}decide/", {"decision": "return", "comment": "Not public."}, format="json")
    assert returned.json()["status"] == "open"
    api_as(member).post(f"{url}report/", {"evidence": "Public now."}, format="json")
    confirmed = api_as(support).post(f"{url}decide/", {"decision": "confirm"}, format="json")
    assert (confirmed.json()["status"], confirmed.json()["confirmed_by"]) == ("met", support.username)
    # Dropping is a program manager's: a support engineer is refused by the service.
    assert api_as(support).post(f"{url}decide/", {"decision": "drop", "comment": "x"}, format="json").status_code == 403
    dropped = api_as(manager).post(f"{url}decide/", {"decision": "drop", "comment": "Amended."}, format="json")
    assert dropped.json()["state"] == "dropped"


def test_a_member_cannot_set_or_change_a_milestone(org, member):
    milestone = MilestoneFactory(organization=org)
    created = api_as(member).post(
        "/api/v1/milestones/", {"organization": org.slug, "title": "Ours", "due_on": "2027-03-01"}, format="json"
    )
    assert created.status_code == 403
    changed = api_as(member).patch(f"/api/v1/milestones/{milestone.pk}/", {"title": "Easier"}, format="json")
    assert changed.status_code == 403
    assert Milestone.objects.get().title == milestone.title


def test_another_organizations_milestone_is_404(org, other_org, member):
    theirs = MilestoneFactory(organization=other_org)
    client = api_as(member)
    assert client.get(f"/api/v1/milestones/{theirs.pk}/").status_code == 404
    assert client.post(f"/api/v1/milestones/{theirs.pk}/report/", {"evidence": "x"}, format="json").status_code == 404
    assert client.get("/api/v1/milestones/").json()["count"] == 0


# --- Deliverables ----------------------------------------------------------------------------------------------

MODEL = {"kind": "model", "title": "Alpha 13B", "released_on": "2027-03-01", "hf_repo_id": "alpha-lab/alpha-13b",
         "license": "apache-2.0", "parameter_count": 13_000_000_000}  # fmt: skip


def test_a_member_records_changes_and_removes_a_model_release(org, member, manager):
    milestone = MilestoneFactory(organization=org)
    client = api_as(member)
    created = client.post("/api/v1/deliverables/", {**MODEL, "milestone": milestone.pk}, format="json")
    assert created.status_code == 201, created.json()
    body = created.json()
    assert (body["organization"], body["milestone"], body["created_by"]) == (org.slug, milestone.pk, member.username)
    assert body["hf_url"] == "https://huggingface.co/alpha-lab/alpha-13b"

    changed = client.patch(f"/api/v1/deliverables/{body['id']}/", {"license": "llama3.1"}, format="json")
    assert changed.status_code == 200 and changed.json()["license"] == "llama3.1"
    assert api_as(manager).get("/api/v1/deliverables/").json()["count"] == 1  # program staff read all
    assert client.delete(f"/api/v1/deliverables/{body['id']}/").status_code == 204
    assert not Deliverable.objects.exists()


def test_a_bad_hugging_face_repository_id_is_a_400_naming_it(org, member):
    response = api_as(member).post("/api/v1/deliverables/", {**MODEL, "hf_repo_id": "alpha--lab/x y"}, format="json")
    assert response.status_code == 400 and list(response.json()) == ["hf_repo_id"]
    api_as(member).post("/api/v1/deliverables/", MODEL, format="json")
    twice = api_as(member).post("/api/v1/deliverables/", {**MODEL, "title": "Again"}, format="json")
    assert twice.status_code == 400 and "hf_repo_id" in twice.json()  # recorded once (the service says so)


def test_related_rows_are_the_organizations_own(org, other_org, member):
    MembershipFactory(organization=other_org, user=member)  # a member of both
    theirs = MilestoneFactory(organization=other_org)
    response = api_as(member).post(
        "/api/v1/deliverables/", {**MODEL, "organization": org.slug, "milestone": theirs.pk}, format="json"
    )
    assert response.status_code == 400 and "milestone" in response.json()
    strangers = MilestoneFactory(organization=MembershipFactory().organization)
    unseen = api_as(member).post(
        "/api/v1/deliverables/", {**MODEL, "organization": org.slug, "milestone": strangers.pk}, format="json"
    )
    assert unseen.status_code == 400 and "milestone" in unseen.json()  # as if it did not exist


def test_a_deliverable_stays_in_its_organization_and_another_orgs_is_404(org, other_org, member):
    MembershipFactory(organization=other_org, user=member)
    ours = DeliverableFactory(organization=org)
    moved = api_as(member).patch(f"/api/v1/deliverables/{ours.pk}/", {"organization": other_org.slug}, format="json")
    assert moved.status_code == 400 and "organization" in moved.json()
    stranger = MembershipFactory().user
    for method in ("get", "patch", "delete"):
        assert getattr(api_as(stranger), method)(f"/api/v1/deliverables/{ours.pk}/").status_code == 404


def test_a_viewer_and_program_staff_record_no_deliverable(org, support):
    viewer = MembershipFactory(organization=org, role=Membership.Role.VIEWER).user
    assert api_as(viewer).post("/api/v1/deliverables/", MODEL, format="json").status_code == 403
    staff = api_as(support).post("/api/v1/deliverables/", {**MODEL, "organization": org.slug}, format="json")
    assert staff.status_code == 403  # the organization's members record its deliverables
    assert not Deliverable.objects.exists()


# --- Budgets ---------------------------------------------------------------------------------------------------


def test_the_budget_api_gives_the_hand_computed_figures(program, alpha, manager):
    client = api_as(manager)
    created = client.post(
        "/api/v1/budgets/", {"organization": alpha.slug, "amount": "15000000", "currency": "JPY"}, format="json"
    )
    assert created.status_code == 201, created.json()
    body = created.json()
    assert (body["program"], body["organization"], body["amount"], body["alert_percents"]) == (
        program.slug, alpha.slug, "15000000.00", [80, 100]
    )  # fmt: skip
    standing = body["standing"]
    assert standing["currency"] == "JPY"
    assert (standing["budget_micro_usd"], standing["budget_local"]) == (100_000 * USD, "15000000")
    assert (standing["spent_micro_usd"], standing["spent_local"]) == (36_700 * USD, "5505000")
    assert (standing["spent_percent"], standing["left_micro_usd"], standing["over"]) == ("36.7", 63_300 * USD, False)
    assert standing["forecast"] == {
        "at_end_micro_usd": 172_200 * USD,
        "low_micro_usd": 104_450 * USD,
        "high_micro_usd": 307_700 * USD,
        "rate_micro_usd_per_day": 1_000 * USD,
        "days_left": "135.500000",
    }
    assert (standing["forecast_percent"], standing["forecast_over"]) == ("172.2", True)
    assert standing["billed_through"] is None

    # Set again: the same budget changes (200), in dollars now.
    again = client.post(
        "/api/v1/budgets/", {"organization": alpha.slug, "amount": "200000", "currency": "USD"}, format="json"
    )
    assert again.status_code == 200 and again.json()["id"] == body["id"]
    assert again.json()["standing"]["budget_micro_usd"] == 200_000 * USD
    patched = client.patch(f"/api/v1/budgets/{body['id']}/", {"alert_percents": [100, 50, 50]}, format="json")
    assert patched.json()["alert_percents"] == [50, 100]  # distinct, ascending (the service's rule)


def test_the_apis_spend_is_the_pages(program, alpha, manager, client):
    budget = (
        api_as(manager)
        .post("/api/v1/budgets/", {"organization": alpha.slug, "amount": "15000000"}, format="json")
        .json()
    )
    whole = api_as(manager).post("/api/v1/budgets/", {"organization": None, "amount": "60000000"}, format="json")
    assert whole.status_code == 201 and whole.json()["organization"] is None
    client.force_login(manager)
    page = client.get(f"/orgs/{alpha.slug}/outcomes/").context["standing"]
    assert budget["standing"]["spent_micro_usd"] == page.spent
    assert budget["standing"]["forecast"]["at_end_micro_usd"] == page.forecast.at_end
    program_page = client.get("/outcomes/").context["whole"]
    assert whole.json()["standing"]["spent_micro_usd"] == program_page.spent == 36_700 * USD
    assert whole.json()["standing"]["budget_micro_usd"] == 400_000 * USD


def test_a_tenant_reads_its_own_budget_only_and_sets_none(program, alpha, other_org, manager):
    member = MembershipFactory(organization=alpha).user
    client = api_as(manager)
    ours = client.post("/api/v1/budgets/", {"organization": alpha.slug, "amount": "1000"}, format="json").json()
    theirs = client.post("/api/v1/budgets/", {"organization": other_org.slug, "amount": "1000"}, format="json").json()
    client.post("/api/v1/budgets/", {"organization": None, "amount": "9000"}, format="json")
    listed = api_as(member).get("/api/v1/budgets/").json()
    assert [b["id"] for b in listed["results"]] == [ours["id"]]  # never the program's, nor another's
    assert api_as(member).get(f"/api/v1/budgets/{theirs['id']}/").status_code == 404
    refused = api_as(member).post("/api/v1/budgets/", {"organization": alpha.slug, "amount": "1"}, format="json")
    assert refused.status_code == 403
    assert api_as(member).patch(f"/api/v1/budgets/{ours['id']}/", {"amount": "1"}, format="json").status_code == 403
    assert Budget.objects.get(pk=ours["id"]).amount == 1000
    moved = client.patch(f"/api/v1/budgets/{ours['id']}/", {"organization": other_org.slug}, format="json")
    assert moved.status_code == 400 and "organization" in moved.json()


# --- Reports ---------------------------------------------------------------------------------------------------


def test_reports_are_each_readers_own_with_links_and_no_bytes(program, org, other_org, member, manager, client):
    ours = ReportFactory(program=program, organization=org)
    no_pdf = ReportFactory(program=program, organization=org, language="ja", pdf=None, pdf_error="No fonts.")
    ReportFactory(program=program, organization=other_org)
    ReportFactory(program=program, organization=None)  # the program's: staff only
    listed = api_as(member).get("/api/v1/reports/").json()
    assert sorted(r["id"] for r in listed["results"]) == sorted([ours.pk, no_pdf.pk])
    body = api_as(member).get(f"/api/v1/reports/{ours.pk}/").json()
    assert "xlsx" not in body and "pdf" not in body
    assert body["xlsx_url"] == f"http://testserver/reports/{ours.pk}/report.xlsx"
    assert (body["has_pdf"], body["pdf_url"]) == (True, f"http://testserver/reports/{ours.pk}/report.pdf")
    lacking = api_as(member).get(f"/api/v1/reports/{no_pdf.pk}/").json()
    assert (lacking["has_pdf"], lacking["pdf_url"], lacking["pdf_error"]) == (False, None, "No fonts.")
    client.force_login(member)
    assert client.get(body["xlsx_url"]).content == b"PK"  # the link is the page's download
    assert api_as(manager).get("/api/v1/reports/").json()["count"] == 4
    assert api_as(MembershipFactory(organization=other_org).user).get(f"/api/v1/reports/{ours.pk}/").status_code == 404


def test_the_browsable_api_renders_one_milestone_and_one_budget(program, org, manager):
    """Its forms read a lone object, without the page's states and standings read at once."""
    milestone = MilestoneFactory(organization=org)
    budget = api_as(manager).post("/api/v1/budgets/", {"organization": org.slug, "amount": "1000"}, format="json")
    for url in (f"/api/v1/milestones/{milestone.pk}/", f"/api/v1/budgets/{budget.json()['id']}/"):
        response = api_as(manager).get(url, {"format": "api"}, HTTP_ACCEPT="text/html")
        assert response.status_code == 200, url
