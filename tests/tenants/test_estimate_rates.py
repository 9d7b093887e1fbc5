"""Estimates price at the rate card in force over the window, as usage does, and say which rate, with the catalog
price beside: the request form, the review queue and POST /api/v1/estimate/ agree (a negotiated $48/h P5 against
the $55.04 catalog price)."""

from datetime import date
from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from tests.factories import CapacityRequestFactory, MembershipFactory, instance_type
from workloads.usage.models import RateCardEntry

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("before_the_program")]

BODY = {
    "parameter_count": 10**9, "training_tokens": 20_200_000_000, "instance_type": "p5.48xlarge",
    "region": "us-east-1", "instance_count": 1, "starts_on": "2027-01-01", "ends_on": "2027-01-31",
}  # fmt: skip


def rate(usd: str, effective_from: date, kind=RateCardEntry.Kind.NEGOTIATED) -> RateCardEntry:
    return RateCardEntry.objects.create(
        instance_type=instance_type("p5.48xlarge"), region="us-east-1", kind=kind, usd_per_hour=Decimal(usd),
        effective_from=effective_from,
    )  # fmt: skip


def test_the_estimate_api_prices_at_the_negotiated_rate_with_the_catalog_beside(member_api, pool):
    rate("48.00", date(2026, 12, 15))
    body = member_api.post("/api/v1/estimate/", BODY, format="json").json()
    # 10.63785 instance-hours (tests/tenants/test_estimate.py) × 48 = 510.62; × 55.04 = 585.51.
    assert (body["usd_per_hour"], body["rate_source"], body["rate_effective_from"]) == ("48.0000", "negotiated",
                                                                                       "2026-12-15")  # fmt: skip
    assert body["cost_usd"] == "510.62" and body["catalog_cost_usd"] == "585.51"
    assert body["window_cost_usd"] == "35712.00"  # 31 days × 24 h × $48
    assert body["catalog_usd_per_hour"] == "55.0400" and body["catalog_window_cost_usd"] == "40949.76"
    assert body["rate_changes"] is False


def test_without_a_rate_card_entry_the_catalog_price_is_the_rate(member_api, pool):
    body = member_api.post("/api/v1/estimate/", BODY, format="json").json()
    assert (body["usd_per_hour"], body["rate_source"], body["cost_usd"]) == ("55.0400", "catalog", "585.51")


def test_a_rate_change_inside_the_window_prices_each_day_at_its_rate(member_api, pool):
    rate("48.00", date(2026, 12, 1))
    rate("40.00", date(2027, 1, 17))  # 16 days at 48, 15 at 40
    body = member_api.post("/api/v1/estimate/", BODY, format="json").json()
    assert body["rate_changes"] is True
    assert Decimal(body["window_cost_usd"]) == (16 * 48 + 15 * 40) * 24  # exactly the sum of the days
    assert body["rate_source"] == "negotiated"


def test_the_request_form_and_the_review_queue_say_which_rate(client, manager_client, org, pool):
    rate("48.00", date(2026, 12, 15))
    client.force_login(MembershipFactory(organization=org).user)
    form = {"pool": "p5.48xlarge/us-east-1", "instance_count": "1", "starts_on": "2027-01-01", "ends_on": "2027-01-31",
            "parameters_b": "1", "tokens_b": "20.2"}  # fmt: skip
    panel = client.post(f"/orgs/{org.slug}/capacity/estimate/", form).text
    assert "$48.00/h, negotiated rate" in panel and "from 2026-12-15" in panel
    assert "Catalog $55.04/h" in panel and "35,712 USD" in panel
    CapacityRequestFactory(pool=pool, organization=org, instance_count=1, parameter_count=10**9,
                           ends_on=date(2027, 1, 31))  # fmt: skip
    queue = manager_client.get("/program/capacity/review/").text
    assert "35,712 USD" in queue and "$48.00/h, negotiated rate" in queue and "Catalog $55.04/h" in queue


def test_the_review_queue_loads_the_rate_card_once(manager_client, pool, django_assert_max_num_queries):
    rate("48.00", date(2026, 12, 15))
    for _n in range(3):
        CapacityRequestFactory(pool=pool, parameter_count=10**9)
    manager_client.get("/program/capacity/review/")
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as few:
        manager_client.get("/program/capacity/review/")
    for _n in range(5):
        CapacityRequestFactory(pool=pool, parameter_count=10**9)
    with CaptureQueriesContext(connection) as more:
        manager_client.get("/program/capacity/review/")
    assert len(more) == len(few)
    assert sum("rate_card" in q["sql"].lower() or "ratecardentry" in q["sql"].lower() for q in more) <= 1


@pytest.fixture
def member_api(member):
    client = APIClient()
    client.force_authenticate(member)
    return client
