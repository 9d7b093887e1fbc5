"""The program's tables in Chromium at 1280 px, in English and Japanese, on the demo program: the weekly
review's table fits without scrolling (its Utilization and Change columns were cut in Japanese), the program's jobs
table shows its cluster column, the tenant overview's facts stay inside their card, and a sortable table sorts in
place through htmx with the sort in the URL. Screenshots in test-artifacts/."""

from datetime import date, timedelta

import pytest
from django.core.management import call_command

from tests.browser.test_usage import OVERFLOWING, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("catalog")]

# How far a table runs past its own scroll box (0: it fits, nothing hidden to the right).
HIDDEN_PX = """selector => { const box = document.querySelector(selector).closest('.table-scroll');
    return box.scrollWidth - box.clientWidth; }"""


@pytest.fixture
def demo(db):
    call_command("load_demo", "--start", (date.today() - timedelta(days=45)).isoformat())
    call_command("load_demo_workloads")
    call_command("load_demo_usage")


@pytest.mark.parametrize("language", ["en", "ja"])
def test_the_weekly_review_and_the_jobs_fit_at_1280(page, live_server, screenshot, demo, language):
    log_in(page, live_server, "manager", language)
    page.goto(f"{live_server.url}/review/")
    assert page.locator("table.review-table tbody tr").count() == 12
    screenshot(f"review-{language}")
    assert page.evaluate(HIDDEN_PX, "table.review-table") <= 0  # Utilization, Change and the costs in view
    assert page.locator("table.review-table tbody tr").first.locator("td").last.inner_text().startswith("$")

    page.goto(f"{live_server.url}/jobs/")
    if page.locator("table.jobs").count():
        screenshot(f"jobs-program-{language}")
        assert page.evaluate(HIDDEN_PX, "table.jobs") <= 0  # the cluster column is not cut off


@pytest.mark.parametrize("language", ["en", "ja"])
def test_the_tenant_overview_keeps_its_facts_in_their_card(page, live_server, screenshot, demo, language):
    from tenants.models import Organization

    Organization.objects.filter(slug="sakura-lab").update(
        role_arn="arn:aws:iam::123456789012:role/FoundationModelProgramPortalCrossAccountAccessRole",
        contact_name="Hanako Yamada",
        contact_email="hanako.yamada.research-computing-office@sakura-language-lab.example.ac.jp",
    )
    log_in(page, live_server, "tenant1", language)
    page.goto(f"{live_server.url}/orgs/sakura-lab/")
    screenshot(f"org-home-{language}")
    assert page.evaluate(OVERFLOWING) == []


@pytest.mark.parametrize("language", ["en", "ja"])
def test_a_header_sorts_the_table_in_place(page, live_server, screenshot, demo, language):
    """clicking a column header sorts through htmx (no reload), the sort in the URL; again, the
    other way."""
    log_in(page, live_server, "manager", language)
    page.goto(f"{live_server.url}/program/usage/?period=program")
    page.evaluate("window.__notReloaded = true")
    header = page.locator("#org-usage thead a[data-sort=utilization]")
    header.click()
    page.wait_for_url("**sort=utilization**")
    page.wait_for_function("() => !document.querySelector('.htmx-request')")
    cells = (
        "() => [...document.querySelectorAll('#org-usage tbody tr td:nth-child(4)')]"
        ".map(td => parseFloat(td.innerText))"
    )
    rising = page.evaluate(cells)
    assert len(rising) == 12 and rising == sorted(rising)
    page.locator("#org-usage thead a[data-sort=utilization]").click()
    page.wait_for_url("**sort=-utilization**")
    page.wait_for_function("() => !document.querySelector('.htmx-request')")
    assert page.evaluate(cells) == sorted(rising, reverse=True)
    assert page.evaluate("window.__notReloaded") is True
    assert page.evaluate(OVERFLOWING) == []
    screenshot(f"usage-sorted-{language}")

    page.goto(f"{live_server.url}/program/capacity/allocations/")
    page.locator("table.allocations thead a[data-sort=instances]").click()
    page.wait_for_url("**sort=instances**")
    page.wait_for_function("() => !document.querySelector('.htmx-request')")
    counts = page.evaluate(
        "() => [...document.querySelectorAll('table.allocations tbody tr td:nth-child(3)')]"
        ".map(td => parseInt(td.innerText))"
    )
    assert counts == sorted(counts) and len(counts) > 1
