"""One figure, one meaning: an organization-week with one pool over-running its allocation and another idle reads
the same idle and over-allocation figures on the program page, the organization's page, both CSVs, the API and
the digest — and they match a hand computation (idle per pool and day floored at 0, then summed; over-allocation
its own figure, never netted)."""

import csv
import io
import re
from datetime import date
from decimal import Decimal

import pytest
import time_machine
from rest_framework.test import APIClient

from tenants.models import Allocation
from tests.factories import OrganizationFactory
from tests.usage.conftest import WEEK, allocate, jst, run
from workloads.usage import rollups
from workloads.usage.reports import program_report

pytestmark = pytest.mark.django_db

# Hand computation, week 2027-W10 (Mar 8–14, 168 hours), catalog prices (P5 $55.04, Trn1 $21.50):
# P5: 2 allocated, 4 ran all week → over-allocation 2 × 168 = 336 instance-h, 336 × 55.04 = $18,493.44; idle 0.
# Trn1: 4 allocated, 1 ran all week → idle 3 × 168 = 504 instance-h, 504 × 21.50 = $10,836.00; over 0.
# Netted at the org level (allocated cost − running cost = $32,941.44 − $40,598.88) it would read $0 idle.
IDLE_HOURS, IDLE_COST = Decimal("504.0"), Decimal("10836.00")
OVER_HOURS, OVER_COST = Decimal("336.0"), Decimal("18493.44")
AFTER_WEEK = jst(2027, 3, 16, 9)


@pytest.fixture
def gamma(program, p5, trn1):
    org = OrganizationFactory(name="Gamma Lab", slug="gamma")
    allocate(org, p5, 2, date(2027, 3, 8), date(2027, 3, 14), status=Allocation.Status.ACTIVE)
    allocate(org, trn1, 4, date(2027, 3, 8), date(2027, 3, 14), status=Allocation.Status.ACTIVE)
    for n in range(4):
        run(org, "p5.48xlarge", jst(2027, 3, 8), jst(2027, 3, 15), instance=f"p{n}")
    run(org, "trn1.32xlarge", jst(2027, 3, 8), jst(2027, 3, 15), instance="t0")
    with time_machine.travel(AFTER_WEEK, tick=False):
        rollups.mark_everything()
        rollups.roll_up()
    return org


@pytest.fixture(autouse=True)
def after_the_week():
    with time_machine.travel(AFTER_WEEK, tick=False):
        yield


def money(text: str) -> Decimal:
    return Decimal(re.sub(r"[^\d.\-]", "", text))


def cell(html: str, figure: str, after: str = "") -> str:
    """The text of the first element marked data-figure="…" after `after` in the page."""
    start = html.index(after) if after else 0
    match = re.search(rf'<(td|th|dd|span)[^>]*data-figure="{figure}"[^>]*>(.*?)</\1>', html[start:], re.S)
    assert match, figure
    return re.sub(r"<[^>]+>", " ", match[2])


def csv_rows(response) -> list[dict]:
    assert response.status_code == 200
    return list(csv.DictReader(io.StringIO(response.getvalue().decode("utf-8-sig"))))


def test_idle_and_over_allocation_agree_on_every_surface(gamma, manager, manager_client, program):
    query = WEEK.query_string
    # The report all of them read.
    report = program_report(period=WEEK, organizations=type(gamma).objects.filter(pk=gamma.pk), program=program)
    figures = report.rows[0].figures
    assert (figures.idle_hours, figures.idle_usd) == (IDLE_HOURS, IDLE_COST)
    assert (figures.over_allocation_hours, figures.over_allocation_usd) == (OVER_HOURS, OVER_COST)
    assert figures.allocated_cost - figures.running_cost < 0  # netting would have hidden both

    # The program page: the organization's row.
    page = manager_client.get(f"/program/usage/?{query}").text
    assert money(cell(page, "idle-cost", ">Gamma Lab</a>").split()[0]) == IDLE_COST
    row = page[page.index(">Gamma Lab</a>") :].split("</tr>")[0]
    over = re.sub(r"<[^>]+>", " ", row[row.index('data-figure="over-allocation"') :].split("</td>")[0])
    assert f"over {OVER_HOURS} h" in over and "$18,493.44" in over
    assert "badge-s2" in row  # flagged

    # The organization's page.
    org_page = manager_client.get(f"/orgs/gamma/usage/?{query}").text
    assert money(cell(org_page, "idle-cost")) == IDLE_COST
    assert Decimal(cell(org_page, "idle").split()[0].replace(",", "")) == IDLE_HOURS
    assert money(cell(org_page, "over-allocation-cost")) == OVER_COST

    # The program CSV and the organization's daily CSV (summed over its days).
    [row] = [
        r for r in csv_rows(manager_client.get(f"/program/usage/export.csv?{query}")) if r["organization"] == "gamma"
    ]
    assert Decimal(row["idle_cost_usd"]) == IDLE_COST and Decimal(row["idle_instance_hours"]) == IDLE_HOURS
    assert Decimal(row["over_allocation_instance_hours"]) == OVER_HOURS
    assert Decimal(row["over_allocation_cost_usd"]) == OVER_COST
    daily = csv_rows(manager_client.get(f"/orgs/gamma/usage/export.csv?{query}"))
    assert len(daily) == 14  # 7 days × 2 pools
    assert sum(Decimal(r["idle_cost_usd"]) for r in daily) == IDLE_COST
    assert sum(Decimal(r["over_allocation_cost_usd"]) for r in daily) == OVER_COST
    assert sum(Decimal(r["over_allocation_instance_hours"]) for r in daily) == OVER_HOURS

    # The API, a week per organization, type and region: summed over its rows.
    api = APIClient()
    api.force_authenticate(manager)
    body = api.get(
        "/api/v1/usage/", {"organization": "gamma", "start": "2027-03-08", "end": "2027-03-14", "granularity": "week"}
    ).json()
    results = body["results"]
    assert len(results) == 2
    assert sum(Decimal(r["idle_cost_usd"]) for r in results) == IDLE_COST
    assert sum(Decimal(r["idle_instance_hours"]) for r in results) == IDLE_HOURS
    assert sum(Decimal(r["over_allocation_instance_hours"]) for r in results) == OVER_HOURS
    assert sum(Decimal(r["over_allocation_cost_usd"]) for r in results) == OVER_COST

    # The weekly review flags it; the digest prints both figures.
    review = manager_client.get("/review/2027-W10/")
    assert review.status_code == 200 and 'data-figure="over-allocation"' in review.text
    flagged = review.text.split('data-figure="over-allocation"')[1].split("</td>")[0]
    assert "over 336.0 h" in flagged and "$18,493.44" in flagged
    from django.template.loader import render_to_string

    text = render_to_string(
        "workloads/usage/email/digest.txt",
        {"report": report, "program": program, "week": "2027-W10", "cases": [], "url": "", "case_url": ""},
    )
    assert "$10,836.00" in text and "336.0 h · $18,493.44" in text


def test_a_csv_reads_as_numbers_in_python(gamma, manager_client):
    """Header first, every numeric column converts, negatives are numbers, the period is in the name and columns."""
    response = manager_client.get("/program/usage/export.csv?period=range&start=2027-03-08&end=2027-03-14")
    assert "usage-2027-03-08_2027-03-14-" in response["Content-Disposition"]
    text = response.getvalue().decode("utf-8-sig")  # streamed
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0][:3] == ["period_start", "period_end", "organization"]
    text_columns = {"period_start", "period_end", "organization", "organization_name", "idle", "billed_through"}
    records = list(csv.DictReader(io.StringIO(text)))
    assert len(records) == len(rows) - 1 > 0  # every line after the header, and at least one
    for record in records:
        assert (record["period_start"], record["period_end"]) == ("2027-03-08", "2027-03-14")
        for column, value in record.items():
            if column not in text_columns and value != "":
                Decimal(value)  # raises on '-0.5 or any text
    daily = manager_client.get("/orgs/gamma/usage/export.csv?period=2027-W10")
    assert "usage-gamma-2027-W10-" in daily["Content-Disposition"]
    daily_records = list(csv.DictReader(io.StringIO(daily.content.decode("utf-8-sig"))))
    assert daily_records, "the organization's daily CSV has no row"
    for record in daily_records:
        for column, value in record.items():
            if column not in {"period_start", "period_end", "day", "instance_type", "region", "rate_source"} and value:
                Decimal(value)


def test_the_formula_guard_quotes_text_and_never_numbers():
    from portal.exports import csv_cell

    assert csv_cell(Decimal("-0.5")) == "-0.5" and csv_cell(-3) == "-3" and csv_cell(2.5) == "2.5"
    assert csv_cell("-0.5") == "'-0.5"  # text that a spreadsheet would run is inert
    assert csv_cell("=HYPERLINK(1)") == "'=HYPERLINK(1)" and csv_cell("@x") == "'@x"
    assert csv_cell(None) == "" and csv_cell(date(2027, 3, 8)) == "2027-03-08"
