"""Figures are exact end to end: every CSV and the API, summed, give the page's totals to the cent and the hours
to the last of their four decimals, for every kind of period — the rule of workloads.usage.definitions (a daily
row kept to the grain and the cent; everything else a sum of daily rows). The `ran_over` fixture computes the
figures by hand; its two twenty-minute days are where rounding once on the total would put the per-day CSV a cent
and a tenth of an hour off the page."""

import csv
import io
import re
from collections import defaultdict
from decimal import Decimal

import pytest
import time_machine
from rest_framework.test import APIClient

from tests.usage.conftest import AFTER_OVER
from workloads.usage.formats import hours_text, hours_value

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("ran_over")]

PERIODS = {
    "week": "period=2027-W10",
    "next week": "period=2027-W11",
    "month": "period=2027-03",
    "program": "period=program",
    "range": "period=range&start=2027-03-09&end=2027-03-12",
}
# By hand (the fixture): per organization, (allocated h, running h, allocated $, running $, idle h, idle $, over h,
# over $). W11 holds Omega's six hours on Mar 15 with nothing allocated; the month and the program to date (Mar 16)
# are W10 and W11; the range is Mar 9–12.
H = Decimal
EXPECTED = {
    "week": {
        "omega": (H("120"), H("158.9166"), H("6604.80"), H("8746.76"), 0, 0, H("38.9166"), H("2141.96")),
        "kappa": (H("336"), H("168"), H("7224.00"), H("3612.00"), H("168"), H("3612.00"), 0, 0),
    },
    "next week": {"omega": (0, H("6"), 0, H("330.24"), 0, 0, H("6"), H("330.24"))},
    "month": {
        "omega": (H("120"), H("164.9166"), H("6604.80"), H("9077.00"), 0, 0, H("44.9166"), H("2472.20")),
        "kappa": (H("336"), H("168"), H("7224.00"), H("3612.00"), H("168"), H("3612.00"), 0, 0),
    },
    "range": {
        # Mar 9 38.25 h ($2,105.28), Mar 10 24 h ($1,320.96), Mar 11 and 12 24.3333 h ($1,339.30) each.
        "omega": (H("96"), H("110.9166"), H("5283.84"), H("6104.84"), 0, 0, H("14.9166"), H("821.00")),
        "kappa": (H("192"), H("96"), H("4128.00"), H("2064.00"), H("96"), H("2064.00"), 0, 0),
    },
}
EXPECTED["program"] = EXPECTED["month"]
HOURS = ("allocated_instance_hours", "running_instance_hours")
COLUMNS = (*HOURS, "allocated_cost_usd", "running_cost_usd", "idle_instance_hours", "idle_cost_usd",
           "over_allocation_instance_hours", "over_allocation_cost_usd")  # fmt: skip


@pytest.fixture(autouse=True)
def after_the_week():
    with time_machine.travel(AFTER_OVER, tick=False):
        yield


def rows(response) -> list[dict]:
    assert response.status_code == 200
    body = response.getvalue() if response.streaming else response.content
    return list(csv.DictReader(io.StringIO(body.decode("utf-8-sig"))))


def total(lines: list[dict], column: str) -> Decimal:
    """A column of a file summed as a spreadsheet would: every cell exactly as written."""
    return sum((Decimal(line[column]) for line in lines if line[column] != ""), Decimal(0))


def expected(period: str, *slugs: str) -> tuple:
    """The hand figures of these organizations, added."""
    found = [EXPECTED[period][slug] for slug in slugs if slug in EXPECTED[period]]
    return tuple(sum((Decimal(f[i]) for f in found), Decimal(0)) for i in range(len(COLUMNS)))


def of(figures) -> tuple:
    """A page's Figures as the columns say them: hours exact to four places, dollars to the cent."""
    return (
        hours_value(figures.allocated), hours_value(figures.running), figures.allocated_usd, figures.running_usd,
        hours_value(figures.idle), figures.idle_usd, hours_value(figures.over_allocation), figures.over_allocation_usd,
    )  # fmt: skip


def footer(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html.split('id="org-usage"')[1].split("<tfoot>")[1]))


@pytest.mark.parametrize("period", PERIODS)
def test_the_program_csv_adds_up_to_the_pages_totals(manager_client, period):
    page = manager_client.get(f"/program/usage/?{PERIODS[period]}")
    totals = page.context["report"].totals
    lines = rows(manager_client.get(f"/program/usage/export.csv?{PERIODS[period]}"))
    summed = tuple(total(lines, column) for column in COLUMNS)
    assert summed == of(totals) == expected(period, "omega", "kappa")
    # The footer says the same figures: dollars to the cent, hours the exact sum rounded to a tenth for people.
    shown = footer(page.text)
    for column, value in zip(COLUMNS, summed, strict=True):
        if column in HOURS:
            assert hours_text(int(value * 3_600_000_000)) in shown, column
        elif column in ("allocated_cost_usd", "running_cost_usd", "idle_cost_usd"):
            assert f"${value:,.2f}" in shown, column
    if summed[-1]:
        assert f"${summed[-1]:,.2f}" in shown  # the program's over-allocation, flagged in the footer


@pytest.mark.parametrize("period", PERIODS)
@pytest.mark.parametrize("slug", ["omega", "kappa"])
def test_the_organizations_daily_csv_adds_up_to_its_page_per_instance_type_and_in_all(manager_client, period, slug):
    page = manager_client.get(f"/orgs/{slug}/usage/?{PERIODS[period]}")
    lines = rows(manager_client.get(f"/orgs/{slug}/usage/export.csv?{PERIODS[period]}"))
    summed = tuple(total(lines, column) for column in COLUMNS)
    assert summed == of(page.context["total"]) == expected(period, slug)
    # Per instance type: the page's pools table.
    by_type = defaultdict(list)
    for line in lines:
        by_type[line["instance_type"]].append(line)
    pools = {pool.instance_type.api_name: figures for pool, figures in page.context["pools"]}
    assert set(by_type) == set(pools)
    for name, part in by_type.items():
        assert tuple(total(part, column) for column in COLUMNS) == of(pools[name]), name
    shown = re.sub(r"<[^>]+>", " ", page.text)
    assert f"{hours_text(int(summed[1] * 3_600_000_000))} instance-h" in shown
    assert f"${summed[3]:,.2f} ran" in shown


@pytest.mark.parametrize("granularity", ["day", "week", "month"])
@pytest.mark.parametrize("period", ["week", "month", "range"])
def test_the_api_adds_up_to_the_pages_totals_by_day_week_and_month(manager, manager_client, granularity, period):
    page = manager_client.get(f"/program/usage/?{PERIODS[period]}")
    report = page.context["report"]
    api = APIClient()
    api.force_authenticate(manager)
    query = {"granularity": granularity, "start": report.period.first, "end": report.period.last, "page_size": 500}
    body = api.get("/api/v1/usage/", query).json()
    assert body["next"] is None
    lines = body["results"]
    summed = tuple(total(lines, column) for column in COLUMNS)
    assert summed == of(report.totals) == expected(period, "omega", "kappa")


def test_the_api_keeps_quarter_hours(manager):
    """Mar 9: Omega ran 24 + 14.25 = 38.25 instance-hours, 14.25 of them beyond its one instance."""
    api = APIClient()
    api.force_authenticate(manager)
    body = api.get(
        "/api/v1/usage/", {"organization": "omega", "granularity": "day", "start": "2027-03-09", "end": "2027-03-09"}
    ).json()
    [row] = body["results"]
    assert row["running_instance_hours"] == "38.2500" and Decimal(row["running_instance_hours"]) == Decimal("38.25")
    assert row["over_allocation_instance_hours"] == "14.2500"
    assert row["running_accelerator_hours"] == "306.0000"  # 38.25 × 8 GPUs
    assert (row["running_cost_usd"], row["over_allocation_cost_usd"]) == ("2105.28", "784.32")
    # A twenty-minute run is a third of an hour: to four places on the grain, its cost to the cent.
    [day] = api.get(
        "/api/v1/usage/", {"organization": "omega", "granularity": "day", "start": "2027-03-11", "end": "2027-03-11"}
    ).json()["results"]
    assert (day["running_instance_hours"], day["running_cost_usd"]) == ("24.3333", "1339.30")
