"""The usage pages and exports: the hand-computed week's exact figures on the page and in the CSV, who sees
what, bad periods, and a bounded number of queries whatever the period."""

import csv
import io
import re
from datetime import date

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.charts import chart_payload, series, values
from tests.factories import MembershipFactory, OrganizationFactory
from tests.usage.conftest import AFTER, allocate, jst, run
from workloads.usage import rollups

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("week")]


@pytest.fixture(autouse=True)
def after_the_week():
    with time_machine.travel(AFTER, tick=False):
        yield


@pytest.fixture
def manager_api_client(api_client, manager):
    api_client.force_authenticate(manager)
    return api_client


@pytest.fixture
def member_api_for_alpha(org_a):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(MembershipFactory(organization=org_a).user)
    return client


@pytest.fixture
def alpha_client(client, org_a):
    client.force_login(MembershipFactory(organization=org_a).user)
    return client


def rows_of(response) -> list[list[str]]:
    text = response.getvalue().decode("utf-8")  # the program CSV is streamed
    assert text.startswith("\ufeff"), "Excel needs the byte-order mark to read Japanese names"
    return list(csv.reader(io.StringIO(text.lstrip("\ufeff"))))


def test_the_program_page_shows_the_hand_computed_week(manager_client):
    page = manager_client.get("/program/usage/?period=2027-W10")
    assert page.status_code == 200
    text = page.text
    # Alpha: 792 allocated, 144.5 ran (18.2%), $33,791.52 allocated, $5,309.20 ran; Beta: 336, 168, 50%.
    for figure in ("792.0", "144.5", "18.2%", "$33,791.52", "$5,309.20", "336.0", "168.0", "50.0%", "$15,605.76"):
        assert figure in text, figure
    assert "$7,802.88" in text
    # Yen at the program's 150 per USD: $33,791.52 → ¥5,068,728.
    assert "¥5,068,728" in text


def test_the_csv_has_the_same_numbers_to_the_cent(manager_client):
    response = manager_client.get("/program/usage/export.csv?period=2027-W10")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    header, *rows = rows_of(response)
    by_org = {row[2]: dict(zip(header, row, strict=True)) for row in rows}
    alpha, beta = by_org["alpha"], by_org["beta"]
    # Hours exact to four places (the grain of the daily rows), money to the cent: the page rounds hours to a tenth.
    assert (alpha["allocated_instance_hours"], alpha["running_instance_hours"]) == ("792.0000", "144.5000")
    assert (alpha["allocated_cost_usd"], alpha["running_cost_usd"]) == ("33791.52", "5309.20")
    assert alpha["idle_cost_usd"] == "28482.32" and alpha["idle"] == "yes"
    assert alpha["running_accelerator_hours"] == "1636.0000"
    assert (beta["utilization_percent"], beta["running_cost_usd"], beta["idle"]) == ("50.0", "7802.88", "no")


def test_a_tenant_sees_its_own_usage_and_nobody_elses(alpha_client):
    assert alpha_client.get("/program/usage/").status_code == 403
    page = alpha_client.get("/orgs/alpha/usage/?period=2027-W10")
    assert page.status_code == 200 and "144.5" in page.text
    assert "Beta Lab" not in page.text and "168.0" not in page.text
    assert alpha_client.get("/orgs/beta/usage/").status_code == 404
    assert alpha_client.get("/orgs/beta/usage/export.csv").status_code == 404
    daily = rows_of(alpha_client.get("/orgs/alpha/usage/export.csv?period=2027-W10"))
    assert {row[3] for row in daily[1:]} == {"p5.48xlarge", "trn1.32xlarge"}
    assert sum(float(row[6]) for row in daily[1:]) == 144.5


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("period=2027-W99", "ISO week"),
        ("period=2027-13", "month such as"),
        ("period=yesterday", "Unknown period"),
        ("period=range&start=2027-03-10&end=2027-03-01", "must not be before the start"),
        ("period=range&start=2020-01-01&end=2027-03-01", "at most three years"),
        ("period=range&start=2027-02-30&end=2027-03-01", "YYYY-MM-DD"),
    ],
)
def test_a_bad_period_is_a_clear_error(manager_client, query, message):
    page = manager_client.get(f"/program/usage/?{query}")
    assert page.status_code == 400 and message in page.text
    export = manager_client.get(f"/program/usage/export.csv?{query}")
    assert export.status_code == 400 and message in export.text


@pytest.mark.parametrize("period", ["2027-W10", "2027-03", "program", "range&start=2027-01-01&end=2027-03-20"])
def test_the_dashboard_takes_a_fixed_number_of_queries(manager_client, period, p5):
    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert manager_client.get(f"/program/usage/?period={period}").status_code == 200
        return len(queries)

    before = count()
    assert count() < before  # the program-wide charts come from the cache the second time
    for number in range(5):  # more organizations, allocations and days of usage: not one query more
        org = OrganizationFactory()
        allocate(org, p5, 2, date(2027, 1, 1), date(2027, 6, 30))
        run(org, "p5.48xlarge", jst(2027, 2, 1), jst(2027, 3, 19), instance=f"x-{number}")
    rollups.mark_everything()
    rollups.roll_up()
    # The new rollup rows are a new generation: the charts are rendered again. 20: the settled-days billing check
    # (its day, billed and computed) and the cycle check of the period asked for are a query each, and the top bar
    # counts open incidents and requests waiting for review on every staff page (two).
    assert count() == before <= 20


def test_htmx_swaps_the_body_for_a_new_period(manager_client):
    fragment = manager_client.get("/program/usage/?period=2027-W09", headers={"HX-Request": "true"})
    assert fragment.status_code == 200 and "<html" not in fragment.text and 'id="usage-body"' in fragment.text


# --- The API -----------------------------------------------------------------------------------------------------


def test_the_api_sums_the_same_week_per_org_type_and_region(manager_api_client):
    response = manager_api_client.get("/api/v1/usage/?granularity=week&start=2027-03-08&end=2027-03-14")
    assert response.status_code == 200, response.json()
    rows = {(r["organization"], r["instance_type"]): r for r in response.json()["results"]}
    alpha_p5, alpha_trn1 = rows[("alpha", "p5.48xlarge")], rows[("alpha", "trn1.32xlarge")]
    assert (alpha_p5["period_start"], alpha_p5["period_end"]) == ("2027-03-08", "2027-03-14")
    assert (alpha_p5["allocated_instance_hours"], alpha_p5["running_instance_hours"]) == ("672.0000", "84.5000")
    assert (alpha_trn1["running_accelerator_hours"], alpha_trn1["utilization_percent"]) == ("960.0000", "50.0")
    assert alpha_p5["allocated_cost_usd"] == "31211.52" and alpha_p5["running_cost_usd"] == "4019.20"
    assert rows[("beta", "p5.48xlarge")]["running_cost_usd"] == "7802.88"


def test_a_tenant_gets_only_its_own_rows_and_another_orgs_slug_is_like_a_missing_one(member_api_for_alpha):
    rows = member_api_for_alpha.get("/api/v1/usage/?start=2027-03-01&end=2027-03-20").json()["results"]
    assert rows and {r["organization"] for r in rows} == {"alpha"}
    foreign = member_api_for_alpha.get("/api/v1/usage/?organization=beta")
    missing = member_api_for_alpha.get("/api/v1/usage/?organization=gamma")
    assert foreign.status_code == missing.status_code == 400
    assert foreign.json() == missing.json()


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("granularity=hour", "granularity"),
        ("start=2027-03-10&end=2027-03-01", "end"),
        ("start=2020-01-01&end=2027-03-01", "start"),  # before the program's cycle and its margin
        ("start=0001-01-01&end=2027-03-01", "start"),
        ("start=2027-03-01&end=9999-12-31", "end"),
        ("start=tomorrow", "start"),
        ("start=", "start"),  # given empty: not the default (portal.serializers.QuerySerializer)
        ("end=&start=2027-03-01", "end"),
        ("granularity=", "granularity"),
        ("ordering=cost", "ordering"),
    ],
)
def test_bad_api_queries_are_400_with_the_field(manager_api_client, query, field):
    response = manager_api_client.get(f"/api/v1/usage/?{query}")
    assert response.status_code == 400 and field in response.json()


def test_the_rate_card_is_read_by_all_and_written_by_managers(member_api_for_alpha, manager_api_client):
    assert member_api_for_alpha.get("/api/v1/rate-card/").status_code == 200
    body = {"instance_type": "trn1.32xlarge", "region": "us-east-1", "kind": "reserved", "usd_per_hour": "15.00",
            "effective_from": "2027-03-12"}  # fmt: skip
    assert member_api_for_alpha.post("/api/v1/rate-card/", body, format="json").status_code == 403
    created = manager_api_client.post("/api/v1/rate-card/", body, format="json")
    assert created.status_code == 201, created.json()
    again = manager_api_client.post("/api/v1/rate-card/", body, format="json")
    assert again.status_code == 400 and "effective_from" in again.json()
    # The Trn1 days from the 12th are re-priced: Alpha ran 12 hours there on the 12th.
    week = manager_api_client.get("/api/v1/usage/?start=2027-03-12&end=2027-03-12&instance_type=trn1.32xlarge").json()
    assert week["results"][0]["running_cost_usd"] == "180.00"


@pytest.mark.parametrize(
    ("usd", "says"),
    [
        ("999999.99", "Ensure that there are no more than 7 digits in total"),  # the schema says 3 before the point
        ("500.00", "at most 215.00"),  # ten times trn1.32xlarge's us-east-1 list price ($21.50)
    ],
)
def test_an_implausible_rate_is_refused_and_prices_nothing(manager_api_client, usd, says):
    from workloads.usage.models import RateCardEntry
    from workloads.usage.rates import MAX_USD_PER_HOUR, RATE_CEILING

    body = {"instance_type": "trn1.32xlarge", "region": "us-east-1", "kind": "reserved", "usd_per_hour": usd,
            "effective_from": "2027-03-12"}  # fmt: skip
    response = manager_api_client.post("/api/v1/rate-card/", body, format="json")
    assert response.status_code == 400 and says in response.json()["usd_per_hour"][0], response.json()
    assert not RateCardEntry.objects.filter(usd_per_hour=usd).exists()
    schema = manager_api_client.get("/api/schema/?format=json").json()
    field = schema["components"]["schemas"]["RateCardEntryRequest"]["properties"]["usd_per_hour"]
    assert field["pattern"] == r"^-?\d{0,3}(?:\.\d{0,4})?$" and f"at most {RATE_CEILING} times" in field["description"]
    assert str(MAX_USD_PER_HOUR) in field["description"]


def test_the_weekly_review_shows_the_weeks_usage_and_links_to_it(manager_client):
    page = manager_client.get("/review/2027-W10/")
    assert page.status_code == 200
    text = page.text
    alpha = text[text.index(">Alpha Lab<") :].split("</tr>")[0]
    beta = text[text.index(">Beta Lab<") :].split("</tr>")[0]
    assert all(figure in alpha for figure in ("792.0", "144.5", "18.2%", "idle"))
    assert all(figure in beta for figure in ("336.0", "168.0", "50.0%")) and "idle" not in beta
    assert 'href="/program/usage/?period=2027-W10"' in text
    # the week's cost beside its usage, the same figures as the usage page's.
    assert all(figure in alpha for figure in ("$5,309.20", "$33,791.52", "$28,482.32"))
    assert "$15,605.76" in beta


def test_the_charts_follow_the_chosen_period(manager_client):
    """Choosing W10 showed "cost to date"; the charts are in the swapped body and about the period."""
    fragment = manager_client.get("/program/usage/?period=2027-W10", headers={"HX-Request": "true"})
    text = fragment.text
    assert 'data-chart="chart-cost-chart"' in text  # the htmx swap redraws the charts
    assert "Cost per organization: Week 2027-W10" in text and "Cost to date" not in text
    cost = chart_payload(text, "chart-cost-chart")["option"]
    alpha = cost["yAxis"]["data"].index("Alpha Lab")
    assert values(series(cost, "allocated cost (what the program commits)")["data"])[alpha] == 33791.52
    assert values(series(cost, "running cost (what ran)")["data"])[alpha] == 5309.2  # the table's own figures
    assert "$5,309.20 / $33,791.52" in text  # at the bar's end and in the chart's table, to the cent
    # The week is framed on the heatmap (its cells outlined) and shaded on the pool lines.
    heatmap = chart_payload(text, "chart-heatmap")["option"]
    weeks = heatmap["xAxis"]["data"]
    framed = {weeks[cell["value"][0]] for cell in heatmap["series"][0]["data"] if "itemStyle" in cell}
    assert framed == {"27-W10"}
    pools = re.findall(r'<script id="(chart-pool-lines-\d+)"', text)
    assert pools and all(
        "chosen period" in [s["name"] for s in chart_payload(text, key)["option"]["series"]] for key in pools
    )
    whole = manager_client.get("/program/usage/?period=program").text
    assert "$5,309.20 / $33,791.52" not in whole
    assert not any("itemStyle" in cell for cell in chart_payload(whole, "chart-heatmap")["option"]["series"][0]["data"])


def test_the_heatmap_and_the_pool_lines_give_the_tables_figures(manager_client):
    """A heatmap cell is the organization's week (running ÷ allocated), its tooltip and the chart's table say the
    same, and the pool lines' week averages are the week's instance-hours over its 168 hours."""
    text = manager_client.get("/program/usage/?period=2027-W10").text
    heatmap = chart_payload(text, "chart-heatmap")["option"]
    alpha = heatmap["yAxis"]["data"].index("Alpha Lab")
    week = heatmap["xAxis"]["data"].index("27-W10")
    cell = next(c for c in heatmap["series"][0]["data"] if c["value"][:2] == [week, alpha])
    assert cell["value"][2] == 18.2 and cell["url"] == "/orgs/alpha/usage/"
    assert cell["name"] == "Alpha Lab · 2027-W10: 18.2% (144.5 of 792.0 instance-hours)"  # as the table says them
    assert [piece["label"] for piece in heatmap["visualMap"]["pieces"]] == [
        "no allocation", "under 25%", "25–50%", "50–75%", "75–100%", "over 100%: ran beyond the allocation",
    ]  # fmt: skip
    assert '<td class="num">18.2%</td>' in text


@pytest.mark.parametrize(
    ("sort", "first"), [("utilization", "Alpha Lab"), ("-utilization", "Beta Lab"), ("-allocated", "Alpha Lab")]
)
def test_the_organizations_sort_by_a_column_in_place(manager_client, sort, first):
    """every column sorts (?sort=col / -col), in place through htmx, the sort in the URL."""
    page = manager_client.get(f"/program/usage/?period=2027-W10&sort={sort}", headers={"HX-Request": "true"})
    assert page.status_code == 200 and "<html" not in page.text
    rows = [row.record.organization.name for row in page.context["org_table"].rows]
    assert rows[0] == first
    assert 'hx-push-url="true"' in page.text and "aria-sort=" in page.text
    link = "?period=2027-W10&amp;sort=-utilization" if sort == "utilization" else "sort=utilization"
    assert link in page.text  # the header sorts the other way next, keeping the period


def test_an_unknown_sort_is_ignored_not_an_error(manager_client):
    for sort in ("nonsense", "-organization__slug", "figures.allocated", "\x00"):
        assert manager_client.get("/program/usage/", {"period": "2027-W10", "sort": sort}).status_code == 200


@pytest.mark.parametrize("period", ["2027-W10", "2027-03", "program", "range&start=2027-03-03&end=2027-03-12"])
def test_every_column_sorts_both_ways_whatever_the_period_reads(manager_client, period):
    """A period read from the weekly summaries (whole weeks, the program) and one read from the daily rows (a month
    that starts mid-week, a range): every sortable column, ascending and descending, is a page — never a 500 (the
    accelerator-hours column's sum was missing from the daily read)."""
    from workloads.usage.tables import OrgUsageTable

    columns = [name for name, column in OrgUsageTable.base_columns.items() if column.orderable is not False]
    assert "accelerators" in columns
    for column in columns:
        for sort in (column, f"-{column}"):
            page = manager_client.get(f"/program/usage/?period={period}&sort={sort}")
            assert page.status_code == 200, (period, sort)
