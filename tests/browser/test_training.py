"""Training progress in Chromium, on the demo's two runs: the workload page's figures and charts (drawn by ECharts,
at 1280 px and 390 px, English and Japanese, nothing logged to the console, nothing wider than the page), a log
uploaded through the page, and the landing page's training at risk. Screenshots in test-artifacts/."""

from pathlib import Path

import pytest
from django.core.management import call_command

from tests.browser.test_usage import OVERFLOWING, log_in
from workloads.records.models import Workload

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("catalog")]

SAMPLE = Path(__file__).parent.parent / "samples" / "training" / "megatron_core_moe_ling_mini_v2.log"
PAGE_SCROLLS_SIDEWAYS = "() => document.documentElement.scrollWidth - window.innerWidth"


@pytest.fixture
def demo(db):
    call_command("load_demo", verbosity=0)
    call_command("load_demo_workloads", verbosity=0)
    call_command("load_demo_training", verbosity=0)


@pytest.mark.parametrize("language", ["en", "ja"])
def test_the_workload_page_draws_progress_against_plan(page, live_server, screenshot, demo, language):
    console = []
    page.on("console", lambda message: console.append(message.text) if message.type in ("error", "warning") else None)
    workload = Workload.objects.get(name="sakura-70b-pretrain")
    log_in(page, live_server, "tenant1", language)
    page.goto(f"{live_server.url}/workloads/{workload.pk}/")
    card = page.locator('[data-testid="training-progress"]')
    assert card.locator('[data-testid="finish"]').inner_text()
    for key in ("training-tokens", "training-loss", "training-mfu"):
        assert page.locator(f'[data-testid="{key}"] svg').count() == 1, key
    card.scroll_into_view_if_needed()
    screenshot(f"training-workload-{language}")
    assert page.evaluate(OVERFLOWING) == []
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    assert page.evaluate(PAGE_SCROLLS_SIDEWAYS) <= 0
    card.scroll_into_view_if_needed()
    screenshot(f"training-workload-390-{language}")
    assert console == []


def test_a_log_uploaded_in_the_browser_is_read_and_named(page, live_server, screenshot, demo):
    workload = Workload.objects.get(name="sakura-70b-sft")
    log_in(page, live_server, "tenant1", "en")
    page.goto(f"{live_server.url}/workloads/{workload.pk}/")
    page.get_by_role("link", name="Upload a training log").click()
    page.locator("input[name=log]").set_input_files(str(SAMPLE))
    page.locator("input[name=run]").fill("ling-cpt")
    page.get_by_role("button", name="Upload and read").click()
    outcome = page.locator('[data-testid="upload-outcome"]')
    assert "Megatron-LM" in outcome.inner_text()
    screenshot("training-upload")
    page.get_by_role("link", name="See the workload's progress").click()
    assert page.locator('[data-testid="training-runs"] tbody tr').count() == 1


def test_the_landing_page_lists_training_at_risk(page, live_server, screenshot, demo):
    log_in(page, live_server, "manager", "en")
    page.goto(f"{live_server.url}/program/")
    card = page.locator("#glance-training")
    assert card.locator("a").count() == 2  # both demo runs will miss their plans
    card.scroll_into_view_if_needed()
    screenshot("training-landing")
