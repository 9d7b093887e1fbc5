"""The workload form's layout fit follows the numbers as they are typed, before the field is left."""

import pytest
from django.core.management import call_command

from tests.browser.test_clusters import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("catalog")]


def test_the_fit_updates_while_a_degree_is_typed(page, live_server, screenshot):
    call_command("load_demo", "--start", "2026-10-01")
    log_in(page, live_server, "tenant1")
    page.wait_for_url(f"{live_server.url}/orgs/sakura-lab/")
    page.goto(f"{live_server.url}/orgs/sakura-lab/workloads/new/")
    fit = page.get_by_test_id("fit")
    assert fit.locator("strong").first.inner_text() == "1"  # TP 1 × PP 1 × DP 1
    field = page.get_by_label("Tensor parallel", exact=True)
    field.click()
    field.press("Control+A")
    page.keyboard.type("8")  # typed, not filled; the field keeps the focus
    page.wait_for_function(
        "() => document.querySelector('[data-testid=fit] strong').textContent.trim() === '8'", timeout=30_000
    )
    assert page.evaluate("() => document.activeElement.name") == "tensor_parallel"
    screenshot("workload-form-fit-live")
