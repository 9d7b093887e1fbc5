"""Every chart of the portal in Chromium at 1280 px, in English and Japanese: ECharts draws it as SVG in its box,
its value axis reads round numbers, hovering gives the values of every series, the legend names them in the page's
language, and an htmx period swap draws the new charts and disposes of the old ones. Screenshots of each chart in
test-artifacts/chart-*.png."""

import json
import math
import re
from datetime import date, timedelta
from decimal import Decimal

import pytest
from django.core.management import call_command

from portal.charts import OVER
from tests.browser.test_usage import OVERFLOWING, demo, log_in  # noqa: F401 (demo is a fixture)
from tests.factories import ClusterFactory
from tests.validation.test_nccl import SRUN_LOG
from workloads.validation.services import record_validation

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("catalog")]

DRAWN = "() => [...document.querySelectorAll('[data-chart]')].every(el => el.querySelector('svg text'))"
# The value axis' ticks as ECharts laid them out, and whether each is printed in the chart's SVG.
TICKS = """(el) => {
    const chart = echarts.getInstanceByDom(el);
    const option = chart.getOption();
    const index = option.xAxis[0].type === 'value' ? 'xAxis' : 'yAxis';
    const ticks = chart.getModel().getComponent(index, 0).axis.scale.getTicks().map(t => t.value);
    const texts = new Set([...el.querySelectorAll('svg text')].map(t => t.textContent));
    return {ticks, printed: ticks.map(v => texts.has(v.toLocaleString('en-US')))};
}"""
LEGEND = """(el) => {
    const texts = [...el.querySelectorAll('svg text')].map(t => t.textContent);
    const option = echarts.getInstanceByDom(el).getOption();
    // A legend listing its entries (a chart with a series drawn only to place another: portal.charts.beyond) names
    // those; otherwise every series is an entry.
    const listed = option.legend.length && option.legend[0].data && option.legend[0].data.length
        ? option.legend[0].data.map(d => typeof d === 'string' ? d : d.name) : null;
    const names = option.visualMap.length ? option.visualMap[0].pieces.map(p => p.label)
                                          : listed || option.series.map(s => s.name);
    return names.filter(name => !texts.includes(name));
}"""


def payload(page, chart_id: str) -> dict:
    return json.loads(page.locator(f"script#{chart_id}").text_content())


def assert_round(ticks: list[float]) -> None:
    """Ticks a step apart, the step 1, 2, 3 or 5 times a power of ten, every tick a multiple of it."""
    step = ticks[1] - ticks[0]
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert round(mantissa, 6) in (1, 2, 3, 5), ticks
    assert all(abs(value / step - round(value / step)) < 1e-6 for value in ticks), ticks


def check_chart(page, chart_id: str, *, hover_for: str | None = None, shot: str = "") -> None:
    """The chart's box holds ECharts' SVG, its value ticks are round and printed, its legend names every series,
    and hovering the plot's middle shows a tooltip with `hover_for` in it (a screenshot of it named `shot`)."""
    box = page.locator(f'[data-chart="{chart_id}"]')
    box.scroll_into_view_if_needed()
    assert box.locator("svg").count() == 1
    if payload(page, chart_id)["option"].get("yAxis", {}) != {} and chart_id != "chart-heatmap":
        axis = box.evaluate(TICKS)
        assert len(axis["ticks"]) >= 3 and all(axis["printed"]), axis
        assert_round(axis["ticks"])
    assert box.evaluate(LEGEND) == []
    if hover_for is not None:
        area = box.bounding_box()
        page.mouse.move(area["x"] + area["width"] * 0.6, area["y"] + area["height"] * 0.55)
        tooltip = box.locator("div").filter(has_text=hover_for).last
        tooltip.wait_for(state="visible")
        assert any(char.isdigit() for char in tooltip.inner_text())
        if shot:
            shoot(page, chart_id, shot)
        page.mouse.move(0, 0)


def shoot(page, chart_id: str, name: str) -> None:
    from tests.browser.conftest import ARTIFACTS

    ARTIFACTS.mkdir(exist_ok=True)
    page.locator(f'[data-chart="{chart_id}"]').screenshot(path=str(ARTIFACTS / f"chart-{name}.png"))


@pytest.mark.parametrize("language", ["en", "ja"])
def test_the_program_usage_charts(page, live_server, demo, language):  # noqa: F811
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    log_in(page, live_server, "manager", language)
    page.goto(f"{live_server.url}/program/usage/?period=program")
    page.wait_for_function(DRAWN)
    running = "稼働（週平均）" if language == "ja" else "running (week average)"
    check_chart(
        page, "chart-heatmap", hover_for="·", shot=f"heatmap-tooltip-{language}"
    )  # a cell: "Org · 2026-W47: 81% (…)"
    pools = [el.get_attribute("data-chart") for el in page.locator('[data-chart^="chart-pool-lines-"]').all()]
    assert len(pools) == 3  # the demo's pools
    for chart_id in pools:
        check_chart(page, chart_id, hover_for=running, shot=f"pool-lines-tooltip-{language}")
    cost = payload(page, "chart-cost-chart")["option"]
    check_chart(page, "chart-cost-chart", hover_for=cost["series"][1]["name"])
    # Minato Finance Models ran past its allocation (the demo's story): its running bar is the table's running cost
    # to the cent, never cut at the allocated amount, and ends in over-allocation's colour.
    minato = next(i for i, name in enumerate(cost["yAxis"]["data"]) if name.startswith("Minato"))
    cell = page.locator("#org-usage tbody tr", has_text="Minato").locator("td").nth(7).inner_text()
    ran = Decimal(re.search(r"\$([\d,]+\.\d\d)", cell)[1].replace(",", ""))
    assert Decimal(str(cost["series"][1]["data"][minato]["value"])) == ran
    beyond = cost["series"][3]
    assert beyond["color"] == OVER and beyond["data"][minato]["value"] > 0
    assert beyond["name"] in page.locator('[data-chart="chart-cost-chart"] svg text').all_text_contents()  # legend
    assert page.evaluate(OVERFLOWING) == []
    shoot(page, "chart-heatmap", f"heatmap-{language}")
    shoot(page, pools[0], f"pool-lines-{language}")
    shoot(page, "chart-cost-chart", f"cost-{language}")
    if language == "ja":  # the legend and the tooltips come translated from the server
        assert running in [s["name"] for s in payload(page, pools[0])["option"]["series"]]

    # Choosing weeks swaps the body (and its charts) through htmx: the new charts are drawn, the old disposed of.
    for index in (1, 2, 3):
        with page.expect_response(lambda response: "/program/usage/?" in response.url):
            page.locator("select[name=period]").select_option(index=index)
        page.wait_for_function("() => !document.querySelector('.htmx-request')")
        page.wait_for_function(DRAWN)
        boxes = page.locator("[data-chart]").count()
        assert page.evaluate("window.portalCharts.count()") == boxes == 5
        assert page.locator("[_echarts_instance_]").count() == boxes
    heatmap = payload(page, "chart-heatmap")["option"]
    assert any("itemStyle" in cell for cell in heatmap["series"][0]["data"])  # the chosen week is framed
    assert any(s.get("yAxisIndex") == 1 for s in payload(page, pools[0])["option"]["series"])  # and shaded
    check_chart(page, "chart-cost-chart", hover_for=cost["series"][1]["name"])
    assert errors == []


@pytest.mark.parametrize("language", ["en", "ja"])
def test_an_organizations_chart_and_the_pool_timeline(page, live_server, demo, language):  # noqa: F811
    log_in(page, live_server, "manager", language)
    page.goto(f"{live_server.url}/orgs/sakura-lab/usage/?period=program")
    page.wait_for_function(DRAWN)
    option = payload(page, "chart-usage-chart")["option"]
    check_chart(page, "chart-usage-chart", hover_for=option["series"][1]["name"])
    shoot(page, "chart-usage-chart", f"org-usage-{language}")

    from tenants.models import CapacityPool

    pool = CapacityPool.objects.order_by("instance_type__api_name", "region").first()
    page.goto(f"{live_server.url}/program/capacity/pools/{pool.pk}/")
    page.wait_for_function(DRAWN)
    option = payload(page, "chart-pool-timeline")["option"]
    check_chart(page, "chart-pool-timeline", hover_for=option["series"][0]["name"])
    labels = page.locator('[data-chart="chart-pool-timeline"] svg text').all_text_contents()
    assert f"{pool.allocatable_instances}" in " ".join(labels)  # the allocatable line says its value
    assert page.evaluate(OVERFLOWING) == []
    shoot(page, "chart-pool-timeline", f"pool-timeline-{language}")


@pytest.mark.parametrize("language", ["en", "ja"])
def test_the_interconnect_chart(page, live_server, language):
    call_command("load_demo", "--start", (date.today() - timedelta(days=45)).isoformat())
    from tenants.models import Organization

    cluster = ClusterFactory(organization=Organization.objects.get(slug="sakura-lab"), name="p5-nccl")
    record_validation(cluster=cluster, log=SRUN_LOG, nodes=2)
    log_in(page, live_server, "tenant1", language)
    page.goto(f"{live_server.url}/clusters/{cluster.pk}/interconnect/")
    page.wait_for_function(DRAWN)
    check_chart(page, "chart-nccl-chart", hover_for="GB/s", shot=f"nccl-tooltip-{language}")
    labels = page.locator('[data-chart="chart-nccl-chart"] svg text').all_text_contents()
    baseline = "ベースライン" if language == "ja" else "baseline"
    assert any(text.startswith(baseline) and "487 GB/s" in text for text in labels), labels
    assert page.evaluate(OVERFLOWING) == []
    shoot(page, "chart-nccl-chart", f"nccl-{language}")
