"""Billed cost from Cost Explorer: the real boto3 call against moto (results injected through moto's API), the
request's shape at the boundary with botocore's Stubber, and the dashboard's gap flag."""

from datetime import date, timedelta
from decimal import Decimal

import boto3
import pytest
import requests
import time_machine
from botocore.stub import Stubber
from django.urls import reverse
from moto import mock_aws
from rest_framework.test import APIClient

from portal.cloud import TransientCloudError
from portal.cloud.costs import daily_costs
from portal.cloud.session import CloudSession
from tenants.models import Organization
from tests.usage.conftest import AFTER, WEEK, WEEK_RUNNING_COST
from workloads.models import BilledCost
from workloads.usage import billing
from workloads.usage.definitions import usd
from workloads.usage.reports import program_report

INJECT = "http://motoapi.amazonaws.com/moto-api/static/ce/cost-and-usage-results"


@pytest.fixture
def ce(monkeypatch, settings):
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    settings.AWS_ENDPOINT_URL = ""
    with mock_aws():
        yield CloudSession(boto3.Session(), region="us-east-1")


def inject(*results):
    """Queue Cost Explorer answers in moto: each get_cost_and_usage with new parameters takes the next one."""
    response = requests.post(INJECT, json={"results": list(results)}, timeout=5)
    assert response.status_code == 201


def day_result(day: date, **costs):
    return {
        "TimePeriod": {"Start": day.isoformat(), "End": (day + timedelta(days=1)).isoformat()},
        "Total": {},
        "Groups": [
            {"Keys": [instance_type], "Metrics": {"UnblendedCost": {"Amount": amount, "Unit": "USD"}}}
            for instance_type, amount in costs.items()
        ],
        "Estimated": False,
    }


def test_daily_costs_reads_every_day_and_instance_type_through_boto3(ce):
    inject(
        {
            "ResultsByTime": [
                day_result(date(2027, 3, 8), **{"p5.48xlarge": "1320.96", "trn1.32xlarge": "0"}),
                day_result(date(2027, 3, 9)),
            ],
            "DimensionValueAttributes": [],
        }
    )
    report = daily_costs(
        account_id="200000000001",
        start=date(2027, 3, 8),
        end=date(2027, 3, 9),
        instance_types=["p5.48xlarge", "trn1.32xlarge"],
        session=ce,
    )
    assert report.days == [date(2027, 3, 8), date(2027, 3, 9)]
    assert [(c.day, c.instance_type, c.usd) for c in report.costs] == [
        (date(2027, 3, 8), "p5.48xlarge", Decimal("1320.96")),
        (date(2027, 3, 8), "trn1.32xlarge", Decimal("0")),
    ]


def test_the_request_filters_to_the_linked_account_and_follows_pages():
    session = CloudSession(boto3.Session(region_name="us-east-1"), region="us-east-1")
    client = session.client("ce")
    expected = {
        "TimePeriod": {"Start": "2027-03-08", "End": "2027-03-10"},
        "Granularity": "DAILY",
        "Metrics": ["UnblendedCost"],
        "GroupBy": [{"Type": "DIMENSION", "Key": "INSTANCE_TYPE"}],
        "Filter": {
            "And": [
                {"Dimensions": {"Key": "LINKED_ACCOUNT", "Values": ["200000000001"]}},
                {"Dimensions": {"Key": "INSTANCE_TYPE", "Values": ["p5.48xlarge"]}},
            ]
        },
    }
    with Stubber(client) as stub:
        stub.add_response(
            "get_cost_and_usage",
            {"ResultsByTime": [day_result(date(2027, 3, 8), **{"p5.48xlarge": "10"})], "NextPageToken": "page-2"},
            expected,
        )
        stub.add_response(
            "get_cost_and_usage",
            {"ResultsByTime": [day_result(date(2027, 3, 9), **{"p5.48xlarge": "20"})]},
            {**expected, "NextPageToken": "page-2"},
        )
        report = daily_costs(
            account_id="200000000001",
            start=date(2027, 3, 8),
            end=date(2027, 3, 9),
            instance_types=["p5.48xlarge"],
            session=_fixed(session, client),
        )
        stub.assert_no_pending_responses()
    assert [c.usd for c in report.costs] == [Decimal("10"), Decimal("20")]


def test_throttling_is_transient_so_the_task_retries():
    session = CloudSession(boto3.Session(region_name="us-east-1"), region="us-east-1")
    client = session.client("ce")
    with Stubber(client) as stub:
        stub.add_client_error("get_cost_and_usage", "ThrottlingException", "Rate exceeded", 400)
        with pytest.raises(TransientCloudError):
            daily_costs(
                account_id="1",
                start=date(2027, 3, 8),
                end=date(2027, 3, 8),
                instance_types=[],
                session=_fixed(session, client),
            )


def _fixed(session, client):
    """A session whose `client("ce")` is the stubbed client."""

    class Fixed:
        def client(self, name):
            assert name == "ce"
            return client

    return Fixed()


@pytest.mark.django_db
def test_fetch_replaces_the_days_it_reads_and_keeps_the_others(week, org_a, org_b, ce):
    org_b.aws_account_id = ""
    org_b.save()  # no linked account: not asked for
    BilledCost.objects.create(
        organization=org_a, day=date(2027, 3, 1), instance_type="p5.48xlarge", cost_micro_usd=7, fetched_at=AFTER
    )
    BilledCost.objects.create(
        organization=org_a, day=date(2027, 3, 18), instance_type="p5.48xlarge", cost_micro_usd=999, fetched_at=AFTER
    )
    inject(
        {
            "ResultsByTime": [
                day_result(date(2027, 3, 18), **{"p5.48xlarge": "100.50"}),
                day_result(date(2027, 3, 19), **{"p5.48xlarge": "200", "trn1.32xlarge": "0"}),
            ],
        }
    )
    with time_machine.travel(AFTER, tick=False):
        outcome = billing.fetch_billed_costs(days=2, session=ce)
        again = billing.fetch_billed_costs(days=2, session=ce)  # same parameters: moto repeats its answer
    assert outcome == again == {"organizations": 1, "rows": 3, "errors": 0}
    assert sorted(BilledCost.objects.values_list("day", "instance_type", "cost_micro_usd")) == [
        (date(2027, 3, 1), "p5.48xlarge", 7),  # outside the re-read window: kept
        (date(2027, 3, 18), "p5.48xlarge", 100_500_000),  # replaced, not added to
        (date(2027, 3, 19), "p5.48xlarge", 200_000_000),  # a zero cost is not kept
    ]


def bill_days(org, factor: Decimal, *, last: date) -> None:
    """Cost Explorer's rows for the organization from the week's first day to `last`: each day's running cost,
    computed by hand (tests/usage/conftest.py, WEEK_RUNNING_COST), × factor."""
    for day, cost in WEEK_RUNNING_COST[org.slug].items():
        if WEEK.first <= day <= last:
            BilledCost.objects.create(
                organization=org,
                day=day,
                instance_type="p5.48xlarge",
                cost_micro_usd=int(cost * factor),
                fetched_at=AFTER,
            )


@pytest.mark.django_db
def test_billed_and_computed_are_compared_over_the_settled_days_only(
    week, org_a, org_b, manager, manager_client, program
):
    """Cost Explorer has billed through the 12th of a week that ran to the 14th: the days after are not yet billed,
    shown apart, and no gap is read into the lag."""
    through = date(2027, 3, 12)
    for org in (org_a, org_b):
        bill_days(org, Decimal("1"), last=through)
    report = program_report(period=WEEK, organizations=Organization.objects.all(), program=program)
    assert report.billed_through == through
    # By hand (conftest, WEEK_RUNNING_COST), the 8th to the 12th:
    # alpha 1,320.96 + 440.32 + 1,093.92 + 1,476.00 + 978.00 = 5,309.20 USD;
    # beta  3 × 24 h × 55.04 + 2 × 24 h × 40.00 = 3,962.88 + 1,920.00 = 5,882.88 USD.
    settled = {org_a.pk: 5_309_200_000, org_b.pk: 5_882_880_000}
    assert sorted(row.organization.pk for row in report.rows) == sorted(settled)
    for row in report.rows:
        assert row.billed_check.computed == settled[row.organization.pk]
        assert abs(row.billed - settled[row.organization.pk]) <= 10  # int() per day
        assert not row.billed_off
        assert row.unbilled_cost == row.figures.running_cost - settled[row.organization.pk]
    assert {row.organization.slug for row in report.rows if row.unbilled_cost} == {"beta"}  # b1 ran to the 14th
    page = manager_client.get(reverse("usage:program") + "?" + WEEK.query_string).text
    assert "through 03-12" in page and "Not yet billed" in page
    assert "more than 10%" not in page
    # The whole period against the billed days would have flagged both (Beta runs to the 14th and beyond).
    whole = {row.organization.pk: row.figures.running_cost for row in report.rows}
    assert any(abs(Decimal(row.billed - whole[row.organization.pk]) / whole[row.organization.pk]) > Decimal("0.1")
               for row in report.rows)  # fmt: skip
    # The API's rows carry the billed cost over the same settled days.
    api = APIClient()
    api.force_authenticate(manager)
    body = api.get("/api/v1/usage/", {"start": "2027-03-08", "end": "2027-03-14", "granularity": "week"}).json()
    rows = {(r["organization"], r["instance_type"]): r for r in body["results"]}
    beta = rows[("beta", "p5.48xlarge")]
    assert beta["billed_through"] == "2027-03-12"
    assert Decimal(beta["billed_computed_cost_usd"]) == usd(settled[org_b.pk])
    assert abs(Decimal(beta["billed_cost_usd"]) - usd(settled[org_b.pk])) <= Decimal("0.01")


@pytest.mark.django_db
def test_a_gap_over_ten_percent_is_flagged_on_the_dashboard(week, org_a, org_b, manager_client, program):
    # Alpha billed 5% over its computed running cost, Beta 20% under, every day of the week.
    for org, factor in ((org_a, Decimal("1.05")), (org_b, Decimal("0.80"))):
        bill_days(org, factor, last=WEEK.last)
    report = program_report(period=WEEK, organizations=Organization.objects.all(), program=program)
    flags = {row.organization.slug: row.billed_off for row in report.rows}
    assert flags == {"alpha": False, "beta": True}
    response = manager_client.get(reverse("usage:program") + "?" + WEEK.query_string)
    assert response.status_code == 200, response
    page = response.content.decode()
    assert ">Beta Lab</a>" in page
    beta_row = page[page.index(">Beta Lab</a>") :].split("</tr>")[0]
    alpha_row = page[page.index(">Alpha Lab</a>") :].split("</tr>")[0]
    assert "more than 10%" in beta_row
    assert 'more than 10%">-20.0%</span>' in beta_row  # a relative gap, not percentage points ("-20.0 pts")
    # The organization's own page flags it too (it showed the billed figure alone).
    org_page = manager_client.get(reverse("usage:org", args=[org_b.slug]) + "?" + WEEK.query_string).text
    assert 'more than 10%">-20.0%</span>' in org_page
    assert (
        "more than 10%"
        not in manager_client.get(reverse("usage:org", args=[org_a.slug]) + "?" + WEEK.query_string).text
    )
    assert "more than 10%" not in alpha_row
