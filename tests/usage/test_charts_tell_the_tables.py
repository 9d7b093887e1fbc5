"""Every usage chart says what the table beside it says, for an organization that ran over its allocation (the
`ran_over` fixture: Omega, hand-computed there): the option each page embeds is parsed and every figure compared
with the page's table. Nothing is capped at the allocation, what ran beyond it has a colour and a legend entry of its
own, and a utilization past 100% is never drawn in the healthy green."""

import re
from decimal import Decimal

import pytest
import time_machine

from portal import charts as portal_charts
from tests.charts import chart_payload, series, values
from tests.usage.conftest import AFTER_OVER
from workloads.usage import charts

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("ran_over")]

ALLOCATED = "allocated cost (what the program commits)"
RUNNING = "running cost (what ran)"
OVER = "over allocation (ran beyond an allocation)"
OVER_BAND = "over 100%: ran beyond the allocation"


@pytest.fixture(autouse=True)
def after_the_week():
    with time_machine.travel(AFTER_OVER, tick=False):
        yield


def text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).strip()


def money(html: str) -> Decimal:
    """The first dollar amount in a cell."""
    return Decimal(re.search(r"\$([\d,]+\.\d\d)", text(html))[1].replace(",", ""))


def over_cell(html: str) -> str:
    """The over-allocation flag of a cell ("over 38.9 h $2,141.96"), empty when there is none."""
    found = re.search(r"over [\d.,]+ h \$[\d,]+\.\d\d", text(html))
    return found[0] if found else ""


def org_table(html: str) -> dict[str, list[str]]:
    """The program table's rows: organization name → its cells (allocated h, running h, utilization, change,
    accelerator-h, allocated cost, running cost, idle cost with the over-allocation flag, billed)."""
    body = html.split('id="org-usage"')[1].split("<tbody>")[1].split("</tbody>")[0]
    return {
        re.search(r'usage/\?[^"]*">([^<]+)</a>', row)[1]: re.findall(r'<td class="num[^"]*">(.*?)</td>', row, re.S)
        for row in body.split("<tr")[1:]
    }


def pool_table(html: str) -> dict[str, list[str]]:
    """The pools table: instance type → its cells (capacity, allocated, running, unallocated, pool cost, running
    cost, idle cost with the over-allocation flag, unallocated cost)."""
    body = html.split('id="pool-usage"')[1].split("<tbody>")[1].split("</tbody>")[0]
    return {
        re.search(r"<td>([a-z0-9.]+)<br>", row)[1]: re.findall(r'<td class="num[^"]*">(.*?)</td>', row, re.S)
        for row in body.split("<tr")[1:]
    }


def piece(option: dict, value: float) -> dict:
    """The heatmap's legend piece (a band) that colours a cell's value."""
    for found in option["visualMap"]["pieces"]:
        if "value" in found and found["value"] == value:
            return found
        if "value" in found:
            continue
        low = found.get("gte", found.get("gt"))
        above = value >= low if "gte" in found else value > low
        below = value < found["lt"] if "lt" in found else value <= found.get("lte", float("inf"))
        if above and below:
            return found
    raise AssertionError(f"no piece for {value}")


def heat_cell(option: dict, week: str, name: str) -> dict:
    x, y = option["xAxis"]["data"].index(week), option["yAxis"]["data"].index(name)
    return next(cell for cell in option["series"][0]["data"] if cell["value"][:2] == [x, y])


def test_the_cost_chart_draws_what_the_table_says_and_over_allocation_apart(manager_client):
    html = manager_client.get("/program/usage/?period=2027-W10").text
    table = org_table(html)
    omega = table["Omega Lab"]
    # The table, by hand (the fixture): Omega ran $8,746.76 of $6,604.80 allocated, $2,141.96 beyond it.
    assert (money(omega[5]), money(omega[6])) == (Decimal("6604.80"), Decimal("8746.76"))
    assert over_cell(omega[7]) == "over 38.9 h $2,141.96"
    payload = chart_payload(html, "chart-cost-chart")
    option = payload["option"]
    assert payload["unit"] == {"digits": 2, "prefix": "$", "suffix": ""}  # a tooltip writes cents, as the table
    names = option["yAxis"]["data"]
    assert names == ["Kappa Lab", "Omega Lab"]  # largest allocated cost first
    allocated, running = values(series(option, ALLOCATED)["data"]), values(series(option, RUNNING)["data"])
    over = values(series(option, OVER)["data"])
    [base] = [s for s in option["series"] if s.get("stack") == "beyond" and s["name"] == ""]
    for index, name in enumerate(names):
        cells = table[name]
        assert Decimal(str(allocated[index])) == money(cells[5]), name
        assert Decimal(str(running[index])) == money(cells[6]), name  # never capped at the allocated amount
        flagged = over_cell(cells[7])
        assert Decimal(str(over[index])) == (money(flagged) if flagged else 0), name
        # The over-allocation segment ends the running bar: it starts where what ran within the allocation ends.
        assert Decimal(str(base["data"][index])) + Decimal(str(over[index])) == Decimal(str(running[index]))
    omega_index = names.index("Omega Lab")
    assert (allocated[omega_index], running[omega_index], over[omega_index]) == (6604.8, 8746.76, 2141.96)
    # Its amounts at the end of its running bar, past the allocated one, as the chart's table writes them.
    label = series(option, OVER)["data"][omega_index]["label"]["formatter"]
    assert label == "$8,746.76 / $6,604.80" and f'<td class="num">{label}</td>' in html
    # Over-allocation: its own colour and legend entry; the transparent base is neither in the legend nor the tooltip.
    assert series(option, OVER)["color"] == portal_charts.OVER
    assert option["legend"]["data"] == [ALLOCATED, RUNNING, OVER]
    assert base["tooltip"] == {"show": False} and base["itemStyle"]["color"] == "transparent"


def test_the_heatmap_and_the_pool_lines_give_the_tables_figures_and_colour_over_100_percent_apart(
    manager_client, p5, trn1
):
    html = manager_client.get("/program/usage/?period=2027-W10").text
    table = org_table(html)
    option = chart_payload(html, "chart-heatmap")["option"]
    for name, cells in table.items():
        cell = heat_cell(option, "27-W10", name)
        utilization, running, allocated = text(cells[2]), text(cells[1]), text(cells[0])
        assert f"{cell['value'][2]:.1f}%" == utilization, name  # the value coloured is the percentage shown
        assert f"{utilization} ({running} of {allocated} instance-hours" in cell["name"], name
    omega = heat_cell(option, "27-W10", "Omega Lab")
    assert omega["name"] == (
        "Omega Lab · 2027-W10: 132.4% (158.9 of 120.0 instance-hours; 38.9 beyond the allocation)"
    )  # by hand; "over 38.9 h" in the table
    assert piece(option, omega["value"][2]) == {"gt": 100, "color": portal_charts.OVER, "label": OVER_BAND}
    kappa = heat_cell(option, "27-W10", "Kappa Lab")
    assert kappa["value"][2] == 50.0 and piece(option, 50.0)["label"] == "50–75%"
    assert piece(option, 100.0)["label"] == "75–100%"  # 100% is used, not over
    # The page colours the utilization as the heatmap does: Omega's 132.4% is not the healthy green.
    assert 'class="util band-over">132.4%' in table["Omega Lab"][2].replace("\n", "")
    assert 'class="util band-3">50.0%' in table["Kappa Lab"][2]

    # The pool lines: the week's averages are the pool table's instance-hours over the week's 168 hours.
    pools = pool_table(html)
    for pool, name in ((p5, "p5.48xlarge"), (trn1, "trn1.32xlarge")):
        chart = chart_payload(html, f"chart-pool-lines-{pool.pk}")["option"]
        week = chart["xAxis"]["data"].index("27-W10")
        cells = pools[name]
        allocated = values(series(chart, "allocated (week average)")["data"])[week]
        running = values(series(chart, "running (week average)")["data"])[week]
        hours = [Decimal(text(cells[i]).replace(",", "")) for i in (1, 2)]
        assert [allocated, running] == [float(round(h / 168, 1)) for h in hours], name
    p5_chart = chart_payload(html, f"chart-pool-lines-{p5.pk}")["option"]
    week = p5_chart["xAxis"]["data"].index("27-W10")
    beyond = series(p5_chart, "over allocation (week average: ran beyond an allocation)")
    assert beyond["color"] == portal_charts.OVER
    over_hours = Decimal(re.search(r"over ([\d.,]+) h", over_cell(pools["p5.48xlarge"][6]))[1])
    assert beyond["data"][week] == float(round(over_hours / 168, 1)) == 0.2  # 38.9166 h ÷ 168, by hand
    lines = [values(series(p5_chart, n)["data"])[week] for n in ("allocated (week average)", "running (week average)")]
    assert lines == [0.7, 0.9]  # 120 ÷ 168 and 158.9166 ÷ 168
    trn1_chart = chart_payload(html, f"chart-pool-lines-{trn1.pk}")["option"]
    assert "over allocation (week average: ran beyond an allocation)" not in [s["name"] for s in trn1_chart["series"]]


def test_a_week_run_with_nothing_allocated_is_over_allocation_on_every_chart(manager_client):
    """Week W11: Omega ran 6 hours (n5) with nothing allocated: no utilization, all of it over-allocation."""
    html = manager_client.get("/program/usage/?period=2027-W11").text
    omega = org_table(html)["Omega Lab"]
    assert text(omega[2]) == "—" and over_cell(omega[7]) == "over 6.0 h $330.24"  # 6 × 55.04
    heat = chart_payload(html, "chart-heatmap")["option"]
    cell = heat_cell(heat, "27-W11", "Omega Lab")
    assert cell["value"][2] == charts.UNALLOCATED_RUN_VALUE
    assert piece(heat, cell["value"][2])["color"] == portal_charts.OVER  # not the grey of "no allocation"
    assert cell["name"] == "Omega Lab · 2027-W11: no allocation; 6.0 instance-hours ran beyond it"
    assert '<td class="num">ran, none allocated</td>' in html
    cost = chart_payload(html, "chart-cost-chart")["option"]
    index = cost["yAxis"]["data"].index("Omega Lab")
    assert values(series(cost, ALLOCATED)["data"])[index] == 0.0
    assert values(series(cost, RUNNING)["data"])[index] == float(money(omega[6])) == 330.24
    assert values(series(cost, OVER)["data"])[index] == 330.24


def test_the_organizations_chart_gives_its_days_and_what_ran_beyond_the_allocation(manager_client):
    html = manager_client.get("/orgs/omega/usage/?period=2027-W10").text
    payload = chart_payload(html, "chart-usage-chart")
    option = payload["option"]
    assert option["xAxis"]["data"] == [f"2027-03-{day:02d}" for day in range(8, 15)]
    # Average instances a day, by hand: 1 allocated Mar 8–12; 38.25 h ran on Mar 9 (1.6), 24.3333 h on Mar 11 and
    # 12 (1.0), 24 h on Mar 13 with nothing allocated; beyond the allocation 14.25 h on Mar 9 (0.6), 24 h on Mar 13.
    assert series(option, "allocated")["data"] == [1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0]
    assert series(option, "running")["data"] == [1.0, 1.6, 1.0, 1.0, 1.0, 1.0, 0.0]
    assert series(option, OVER)["data"] == [0.0, 0.6, 0.0, 0.0, 0.0, 1.0, 0.0]
    assert series(option, OVER)["color"] == portal_charts.OVER and OVER in option["legend"]["data"]
    # The chart's table: the same averages, and each day's instance-hours as the page writes hours.
    rows = re.findall(r"<tr><th scope=\"row\">(2027-03-\d\d)</th>(.*?)</tr>", html, re.S)
    cells = {day: re.findall(r'<td class="num">(.*?)</td>', row) for day, row in rows}
    assert cells["2027-03-09"] == ["1.0", "1.6", "0.6", "24.0", "38.2", "14.2"]  # 38.25 and 14.25, half-even
    assert cells["2027-03-13"] == ["0.0", "1.0", "1.0", "0.0", "24.0", "24.0"]
    for index, day in enumerate(option["xAxis"]["data"]):
        for column, name in enumerate(("allocated", "running", OVER)):
            assert cells[day][column] == f"{values(series(option, name)['data'])[index]:.1f}", (day, name)
    # The page's figures over the week, which the days add up to.
    total = text(html.split('data-figure="over-allocation"')[1].split("</dd>")[0])
    assert "38.9 instance-h" in total and "$2,141.96" in total
    assert "158.9 instance-h" in text(html) and "$8,746.76 ran" in text(html)
