"""Dates a program can mean: every date input — rate card, estimate, capacity request and decision, pool window,
usage range, review week and action item — takes only days within the program's cycle (2027-01-01 – 2027-07-01)
and its margin, and answers anything else with a 400 or a form error naming the field (through tenants.cycle)."""

from datetime import date

import pytest
from django.core.exceptions import ValidationError
from rest_framework.test import APIClient

from tenants.cycle import check_dates, program_cycle
from tests.factories import CapacityRequestFactory, MembershipFactory

pytestmark = pytest.mark.django_db

ESTIMATE = {
    "parameter_count": 10**9, "instance_type": "p5.48xlarge", "region": "us-east-1", "instance_count": 1,
    "starts_on": "2027-01-01", "ends_on": "2027-01-31",
}  # fmt: skip


@pytest.fixture
def manager_api(manager):
    client = APIClient()
    client.force_authenticate(manager)
    return client


@pytest.fixture(autouse=True)
def margin(settings):
    settings.PROGRAM_DATE_MARGIN_DAYS = 30


def test_the_cycle_is_the_programs_with_its_margin(pool):
    cycle = program_cycle()
    assert (cycle.first, cycle.last) == (date(2026, 12, 2), date(2027, 7, 31))
    check_dates(start=date(2026, 12, 2), end=date(2027, 7, 31))  # the edges are in
    with pytest.raises(ValidationError) as error:
        check_dates(start=date(1, 1, 1), end=date(9999, 12, 31), other=date(2027, 3, 1))
    assert set(error.value.message_dict) == {"start", "end"}
    assert "2026-12-02 to 2027-07-31" in error.value.message_dict["start"][0]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"starts_on": "0001-01-01"}, "starts_on"),
        ({"ends_on": "9999-12-31"}, "ends_on"),
        ({"starts_on": "2030-01-01", "ends_on": "2030-02-01"}, "starts_on"),
    ],
)
def test_an_estimate_outside_the_cycle_is_a_400_naming_the_field(member_api, pool, change, field):
    response = member_api.post("/api/v1/estimate/", ESTIMATE | change, format="json")
    assert response.status_code == 400, response.json()
    assert field in response.json() and "program's cycle" in response.json()[field][0]


def test_the_rate_card_refuses_a_rate_from_year_one(manager_api, manager_client, pool):
    body = {"instance_type": "p5.48xlarge", "region": "us-east-1", "kind": "negotiated", "usd_per_hour": "48.00",
            "effective_from": "0001-01-01"}  # fmt: skip
    response = manager_api.post("/api/v1/rate-card/", body, format="json")
    assert response.status_code == 400 and "effective_from" in response.json()
    page = manager_client.post("/program/usage/rates/", body)
    assert page.status_code == 400 and "program&#x27;s cycle" in page.text
    assert (
        manager_api.post("/api/v1/rate-card/", body | {"effective_from": "2027-01-01"}, format="json").status_code
        == 201
    )


def test_a_decision_and_a_pool_window_outside_the_cycle_are_400(manager_api, pool, org):
    request = CapacityRequestFactory(pool=pool, organization=org)
    response = manager_api.post(f"/api/v1/capacity-requests/{request.pk}/approve/", {"ends_on": "9999-12-31"})
    assert response.status_code == 400 and "ends_on" in response.json()
    response = manager_api.get("/api/v1/pools/", {"start": "0001-01-01", "end": "2027-01-31"})
    assert response.status_code == 400 and "start" in response.json()


def test_the_request_form_names_the_date_outside_the_cycle(client, org, pool):
    client.force_login(MembershipFactory(organization=org).user)
    page = client.post(f"/orgs/{org.slug}/capacity/estimate/", {"starts_on": "0001-01-01", "ends_on": "2027-01-31"})
    assert "program&#x27;s cycle" in page.text or "program's cycle" in page.text


def test_usage_ranges_and_review_weeks_outside_the_cycle(manager_client, manager_api, pool):
    page = manager_client.get("/program/usage/", {"period": "range", "start": "0001-01-01", "end": "0001-01-31"})
    assert page.status_code == 400 and "program&#x27;s cycle" in page.text
    assert manager_client.get("/program/usage/", {"period": "1999-W01"}).status_code == 400
    assert manager_client.get("/program/usage/export.csv", {"period": "2030-01"}).status_code == 400
    assert manager_client.get("/review/1970-W01/").status_code == 404
    response = manager_api.post("/api/v1/review-meetings/", {"week": "1970-W01"}, format="json")
    assert response.status_code == 400 and "week" in response.json()
