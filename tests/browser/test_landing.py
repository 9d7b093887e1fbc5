"""The program's landing page in Chromium at 1280 px, in English and Japanese, on the demo program: a program
manager lands on the week at a glance and every part links to its page. Screenshots in test-artifacts/."""

from datetime import date, timedelta

import pytest
from django.core.management import call_command

from tests.browser.test_layout import PAGE_SCROLLS_SIDEWAYS, TOPBAR_WRAPS
from tests.browser.test_usage import OVERFLOWING, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("catalog")]

HEADINGS = {
    "en": ("Last week", "This week so far", "Open S1/S2 cases", "Waiting for review"),
    "ja": ("先週", "今週（ここまで）", "オープンの S1/S2 ケース", "審査待ち"),
}


@pytest.fixture
def demo(db):
    call_command("load_demo", "--start", (date.today() - timedelta(days=45)).isoformat())
    call_command("load_demo_workloads")
    call_command("load_demo_usage")


@pytest.mark.parametrize("language", ["en", "ja"])
def test_the_manager_lands_on_the_programs_week(page, live_server, screenshot, demo, language):
    log_in(page, live_server, "manager", language)
    page.wait_for_url(f"{live_server.url}/program/")
    assert page.locator("html").get_attribute("lang") == language
    for heading in HEADINGS[language]:
        assert page.locator("h2", has_text=heading).first.is_visible(), heading
    last_week = page.locator("#week-1 table.glance-orgs tbody tr")
    assert last_week.count() == 12  # every demo organization, the ones needing attention first
    assert last_week.first.locator(".badge-stale").count() == 1  # the idle one heads the list
    screenshot(f"landing-{language}")
    assert page.evaluate(PAGE_SCROLLS_SIDEWAYS) <= 0
    assert page.evaluate(OVERFLOWING) == []
    assert not page.evaluate(TOPBAR_WRAPS)

    # Each part opens its page: the week's usage, then back and the pools and organizations.
    page.locator("#week-1 .card-head a").click()
    page.wait_for_url("**/program/usage/?period=*")
    page.go_back()
    page.locator(".card-head .actions a.button").first.click()
    page.wait_for_url("**/program/organizations/")
