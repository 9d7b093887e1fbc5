"""The program usage page with many organizations: the ones needing attention first, the rest paged; the heatmap
and the cost chart draw the page's organizations and one row for all the others."""

import re
from datetime import date

import pytest
import time_machine
from django.db.models import Sum

from tenants.models import Allocation
from tests.charts import chart_payload
from tests.factories import OrganizationFactory
from tests.usage.conftest import allocate, jst, run
from workloads.usage import rollups
from workloads.usage.formats import hours_text
from workloads.usage.models import UsageDay

NOW = jst(2027, 3, 17, 9)
ORGS = 45


@pytest.fixture(autouse=True)
def on_wednesday():
    with time_machine.travel(NOW, tick=False):
        yield


@pytest.fixture
def many(program, p5):
    """45 organizations with 1 P5 each from March 1st; every ninth runs nothing (idle)."""
    for n in range(ORGS):
        org = OrganizationFactory(name=f"Org {n:03d}", slug=f"org-{n:03d}")
        allocate(org, p5, 1, date(2027, 3, 1), date(2027, 6, 30), status=Allocation.Status.ACTIVE)
        if n % 9:
            run(org, "p5.48xlarge", jst(2027, 3, 1 + n % 7), last_seen=NOW, instance=f"i-{n}")
    rollups.mark_everything()
    rollups.roll_up()


def rows_of(html: str) -> list[str]:
    table = html.split('id="org-usage"')[1].split("</tbody>")[0]
    return re.findall(r'href="/orgs/[^/]+/usage/\?[^"]*">([^<]+)</a>', table)


@pytest.mark.django_db
def test_idle_organizations_come_first_and_the_rest_is_paged(manager_client, many):
    response = manager_client.get("/program/usage/?period=2027-W10")
    assert response.status_code == 200
    first = rows_of(response.text)
    assert len(first) == 20
    idle = [f"Org {n:03d}" for n in range(0, ORGS, 9)]
    assert first[: len(idle)] == idle  # the five idle ones head the table
    assert "Page 1 of 3 (45 in all)" in response.text
    last = rows_of(manager_client.get("/program/usage/?period=2027-W10&page=3").text)
    assert len(last) == 5
    seen = set(first) | set(rows_of(manager_client.get("/program/usage/?period=2027-W10&page=2").text)) | set(last)
    assert len(seen) == ORGS  # every organization on exactly one page


@pytest.mark.django_db
def test_the_heatmap_draws_the_page_and_the_others_in_one_row(manager_client, many):
    html = manager_client.get("/program/usage/?period=2027-W10").text
    option = chart_payload(html, "chart-heatmap")["option"]
    labels = option["yAxis"]["data"]
    assert len(labels) == 21 and labels[-1] == "Other organizations (25)"
    # The others' cell for W10: the program's running hours less the 20 organizations drawn.
    shown = rows_of(html)
    week = UsageDay.objects.filter(day__gte=date(2027, 3, 8), day__lte=date(2027, 3, 14))
    others = week.exclude(organization__name__in=shown).aggregate(r=Sum("running_microseconds"))["r"]
    details = [cell["name"] for cell in option["series"][0]["data"]]
    cell = [d for d in details if d.startswith("Other organizations (25) · 2027-W10: ")]
    assert len(cell) == 1
    running = re.search(r"\(([\d,.]+) of", cell[0]).group(1)
    assert running == hours_text(others)
    bars = chart_payload(html, "chart-cost-chart")["option"]
    assert "Other organizations (25)" in bars["yAxis"]["data"]


def table_rows(html: str) -> list[dict]:
    """Each row of the page's organization table: its name and its figures' cells as the page prints them."""
    body = html.split('id="org-usage"')[1].split("<tbody>")[1].split("</tbody>")[0]
    return [
        {
            "name": re.search(r'usage/\?[^"]*">([^<]+)</a>', row)[1],
            "cells": re.findall(r'<td class="num[^"]*">(.*?)</td>', row, re.S),
        }
        for row in body.split("<tr")[1:]
    ]


@pytest.mark.django_db
def test_every_page_shows_the_figures_summed_from_the_daily_rows(manager_client, many, program):
    """The figures summed per organization in the database are the daily rows' sums (the one definition), on every
    page and in the CSV, which has every organization (streamed)."""
    from tenants.models import Organization
    from workloads.usage.periods import Period
    from workloads.usage.reports import program_report, summed

    week = Period("week", date(2027, 3, 8), date(2027, 3, 14))
    expected = summed(UsageDay.objects.filter(day__gte=week.first, day__lte=week.last), "organization_id")
    before = summed(UsageDay.objects.filter(day__gte=date(2027, 3, 1), day__lte=date(2027, 3, 7)), "organization_id")
    report = program_report(period=week, organizations=Organization.objects.all(), program=program)
    assert len(report.rows) == ORGS
    for row in report.rows:
        assert row.figures == expected[(row.organization.pk,)], row.organization.name
        assert row.change == expected[(row.organization.pk,)].utilization - before[(row.organization.pk,)].utilization
    assert report.totals.running == sum(f.running for f in expected.values())

    by_name = {row.organization.name: row for row in report.rows}
    seen = []
    for number in (1, 2, 3):
        for shown in table_rows(manager_client.get(f"/program/usage/?period=2027-W10&page={number}").text):
            running = by_name[shown["name"]].figures.running_hours
            assert shown["cells"][1].strip() == f"{running:,.1f}", shown["name"]
            seen.append(shown["name"])
    assert sorted(seen) == sorted(by_name)

    export = manager_client.get("/program/usage/export.csv?period=2027-W10")
    assert export.streaming
    import csv
    import io

    lines = list(csv.DictReader(io.StringIO(export.getvalue().decode("utf-8-sig"))))
    assert [line["organization_name"] for line in lines] == sorted(by_name)  # every organization, by name
    for line in lines:
        assert line["running_instance_hours"] == f"{by_name[line['organization_name']].figures.running_hours:.4f}"


@pytest.mark.django_db
def test_a_sort_runs_across_the_pages_in_the_database(manager_client, many):
    """?sort=-running orders all 45 organizations, then pages them: the pages read in a row are in order."""
    names = []
    for number in (1, 2, 3):
        page = manager_client.get(f"/program/usage/?period=2027-W10&sort=-running&page={number}")
        names += [row.organization.name for row in page.context["org_table"].page.object_list]
    running = dict(
        UsageDay.objects.filter(day__gte=date(2027, 3, 8), day__lte=date(2027, 3, 14))
        .values_list("organization__name")
        .annotate(total=Sum("running_microseconds"))
    )
    assert len(names) == ORGS == len(set(names))
    assert [running[name] for name in names] == sorted(running.values(), reverse=True)


@pytest.mark.django_db
def test_running_beyond_an_allocation_comes_right_after_the_idle(manager_client, many, p5):
    """Needing attention first: the idle organizations, then one running more nodes than it was allocated."""
    over = OrganizationFactory(name="Zeta over", slug="zeta-over")
    allocate(over, p5, 1, date(2027, 3, 1), date(2027, 6, 30), status=Allocation.Status.ACTIVE)
    for n in range(2):
        run(over, "p5.48xlarge", jst(2027, 3, 1), last_seen=NOW, instance=f"z-{n}")
    rollups.mark_everything()
    rollups.roll_up()
    first = rows_of(manager_client.get("/program/usage/?period=2027-W10").text)
    assert first[:6] == [*(f"Org {n:03d}" for n in range(0, ORGS, 9)), "Zeta over"]
