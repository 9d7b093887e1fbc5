"""The capacity planner in Chromium at 1280 px, in English and Japanese: a manager plans the demo queue from the
review queue, reads the plan (nothing overflows its card, the page never scrolls sideways) and applies it."""

from datetime import date, timedelta

import pytest
from django.core.management import call_command

from tenants.models import CapacityPool, CapacityRequest, Organization
from tests.browser.test_layout import BROKEN_WORDS, PAGE_SCROLLS_SIDEWAYS
from tests.browser.test_usage import OVERFLOWING, log_in
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("catalog")]


@pytest.mark.parametrize("language", ["en", "ja"])
def test_a_manager_plans_the_queue_reads_why_and_applies(page, live_server, screenshot, language):
    call_command("load_demo")
    pool = CapacityPool.objects.select_related("instance_type").filter(instance_type__api_name="p5.48xlarge").first()
    first = max(date.today() + timedelta(days=1), pool.starts_on)
    tenant = UserFactory()
    for i, org in enumerate(Organization.objects.order_by("pk")[:4]):
        CapacityRequest.objects.create(
            organization=org, pool=pool, instance_count=6 + i, starts_on=first, ends_on=first + timedelta(days=20),
            start_slack_days=7 * (i % 2), justification="Pre-training", status=CapacityRequest.Status.SUBMITTED,
            created_by=tenant,
        )  # fmt: skip
    page.set_viewport_size({"width": 1280, "height": 900})
    log_in(page, live_server, "manager", language)
    page.goto(f"{live_server.url}/program/capacity/review/")
    page.locator("a[href='/program/capacity/plans/']").first.click()
    page.locator("form button.primary").first.click()
    page.wait_for_url("**/program/capacity/plans/*/")
    page.locator('[data-chart^="chart-plan-pool-"] svg text').first.wait_for()
    assert page.evaluate(PAGE_SCROLLS_SIDEWAYS) <= 0
    assert page.evaluate(OVERFLOWING) == []
    assert page.evaluate(BROKEN_WORDS) == []
    screenshot(f"capacity-plan-{language}")
    page.locator("form[action$='/apply/'] button.primary").click()
    page.wait_for_load_state()
    assert page.locator("ul.messages").count() == 1
    screenshot(f"capacity-plan-applied-{language}")
