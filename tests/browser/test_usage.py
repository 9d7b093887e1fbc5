"""The usage dashboards in Chromium at 1280 px, in English and Japanese, on the demo program's usage: the
program dashboard (staff) and an organization's usage page (a member). Screenshots in test-artifacts/."""

from datetime import date, timedelta

import pytest
from django.core.management import call_command

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("catalog")]

# Every card's content fits its card: a table wider than its scroll box, an SVG or a value in a list of facts (a
# role ARN, an email address) wider than the card is a bug.
OVERFLOWING = """() => [...document.querySelectorAll('main .card')].flatMap(card => {
    const box = card.getBoundingClientRect();
    return [...card.querySelectorAll('table, svg, dd')].filter(el => {
        const scroller = el.closest('.table-scroll');
        const limit = (scroller || card).getBoundingClientRect();
        return el.getBoundingClientRect().right > Math.max(limit.right, box.right) + 1;
    }).map(el => el.tagName + ' in ' + (card.querySelector('h2')?.innerText || '?'));
})"""


@pytest.fixture
def demo(db):
    call_command("load_demo", "--start", (date.today() - timedelta(days=45)).isoformat())
    call_command("load_demo_usage")


def log_in(page, live_server, username: str, language: str) -> None:
    page.context.add_cookies([{"name": "django_language", "value": language, "url": live_server.url}])
    page.goto(f"{live_server.url}/login/")
    page.locator("input[name=username]").fill(username)
    page.locator("input[name=password]").fill("demo")
    page.locator("form button[type=submit]").last.click()
    page.wait_for_load_state()


@pytest.mark.parametrize("language", ["en", "ja"])
def test_the_program_dashboard_reads_at_1280(page, live_server, screenshot, demo, language):
    log_in(page, live_server, "manager", language)
    page.goto(f"{live_server.url}/program/usage/?period=program")
    assert page.locator("html").get_attribute("lang") == language
    table = page.locator("#usage-body table").first
    assert table.locator("tbody tr").count() == 12  # every demo organization
    assert page.locator('[data-chart="chart-heatmap"] svg').count() == 1  # the utilization heatmap (ECharts)
    assert page.locator('[data-chart^="chart-pool-lines-"] svg').count() >= 2  # a chart per pool (P5, Trn1)
    screenshot(f"usage-program-{language}")
    assert page.evaluate(OVERFLOWING) == []
    idle = page.locator("#usage-body tr.attention")
    assert idle.count() >= 1  # the idle demo organization is flagged

    # Choosing a week swaps the body through htmx without reloading the page.
    page.evaluate("window.__notReloaded = true")
    page.locator("select[name=period]").select_option(index=1)
    page.wait_for_function("() => document.querySelector('#usage-body') && !document.querySelector('.htmx-request')")
    assert page.evaluate("window.__notReloaded") is True
    assert page.evaluate(OVERFLOWING) == []
    screenshot(f"usage-program-week-{language}")


@pytest.mark.parametrize("language", ["en", "ja"])
def test_an_organizations_usage_page_reads_at_1280(page, live_server, screenshot, demo, language):
    log_in(page, live_server, "tenant1", language)
    page.goto(f"{live_server.url}/orgs/sakura-lab/usage/?period=program")
    assert page.locator("html").get_attribute("lang") == language
    assert page.locator("main table").count() >= 2
    assert page.locator("main svg").count() >= 1
    assert page.evaluate(OVERFLOWING) == []
    screenshot(f"usage-org-{language}")
    # Another organization's usage is a 404 in the browser too.
    assert page.goto(f"{live_server.url}/orgs/kitsune-ai/usage/").status == 404


def test_typing_dates_picks_the_range_in_one_request(page, live_server, demo):
    """Typing the dates of a custom range picks "Custom range" and sends one request once the typing stops (a
    date input changes at every digit of its year)."""
    log_in(page, live_server, "manager", "en")
    page.goto(f"{live_server.url}/program/usage/")
    first, last = date.today() - timedelta(days=14), date.today() - timedelta(days=8)
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if "/program/usage/?" in r.url else None)
    page.locator("#start").focus()
    page.locator("#start").press_sequentially(first.strftime("%m%d%Y"))
    page.locator("#end").focus()
    page.locator("#end").press_sequentially(last.strftime("%m%d%Y"))
    page.wait_for_timeout(1500)  # longer than the form's debounce, so a second request would have gone
    page.wait_for_function("() => !document.querySelector('.htmx-request')")
    assert len(sent) == 1, sent
    assert (
        "period=range" in sent[0] and f"start={first.isoformat()}" in sent[0] and f"end={last.isoformat()}" in sent[0]
    )
    assert page.locator("select[name=period]").input_value() == "range"
    assert f"{first.isoformat()} – {last.isoformat()}" in page.locator("#usage-body h2").first.inner_text()
