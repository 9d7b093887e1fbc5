from datetime import date, timedelta

import pytest
from django.core.management import call_command

from tenants.models import Allocation, CapacityRequest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("catalog")]


def log_in(page, live_server, username: str) -> None:
    page.context.clear_cookies()
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("demo")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_load_state()


def test_request_estimate_partial_approval_allocation(page, live_server, screenshot):
    call_command("load_demo")  # the demo cycle is running: 60 of 62 P5 in us-east-1 are allocated
    first = (date.today().replace(day=1) + timedelta(days=32)).replace(day=1)
    last = first + timedelta(days=59)

    log_in(page, live_server, "tenant1")
    page.get_by_role("link", name="Capacity", exact=True).click()
    page.get_by_role("link", name="Request capacity").click()
    console = []  # typing must log nothing: no aborted htmx requests
    page.on("console", lambda message: console.append(message.text) if message.type in ("error", "warning") else None)
    page.get_by_label("Pool").select_option("p5.48xlarge/us-east-1")
    page.get_by_label("Instances").fill("4")
    page.get_by_label("First day").fill(first.isoformat())
    page.get_by_label("Last day").fill(last.isoformat())
    page.get_by_label("Justification").fill("Continued pre-training of our 8B model on Japanese web data.")
    page.get_by_label("Parameters (billions)").fill("8")
    page.get_by_label("Training tokens (billions)").fill("1000")
    # The estimate panel updates as the tenant types, without a page load.
    estimate = page.locator("#estimate")
    estimate.locator("dt", has_text="Accelerator-hours").wait_for(timeout=30_000)  # a loaded CI box is slow
    # 4.8e22 FLOPs on 4 P5: ~35 days of a 60-day window; but the pool has 2 free, so not a plain "Fits".
    assert "Fits on 4 instances" in estimate.inner_text()
    assert "2 instances are free in this pool" in estimate.inner_text()  # asking 4 of the 2 left: said at once
    assert console == []
    screenshot("capacity-1-request-form-with-estimate")
    page.get_by_role("button", name="Submit for review").click()
    page.get_by_text("submitted for review").wait_for()
    request = CapacityRequest.objects.get(status=CapacityRequest.Status.SUBMITTED, instance_count=4)
    screenshot("capacity-2-request-submitted")

    log_in(page, live_server, "manager")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Capacity review").click()  # the top bar's
    row = page.locator(f"#request-{request.pk}")
    assert "2 of 62 free" in row.inner_text()
    screenshot("capacity-3-review-queue")
    row.get_by_label("Instances").fill("2")
    row.get_by_label("Comment to the tenant").fill("Two now; the pool is full until the spring.")
    row.get_by_role("button", name="Approve").click()
    decided = page.locator(f"#decided-{request.pk}")
    decided.get_by_text("Partially approved").wait_for()
    page.locator(f"#request-{request.pk}").wait_for(state="detached")
    # The queue reloads itself: the other P5 request in us-east-1 now sees no free capacity.
    other = CapacityRequest.objects.filter(status="submitted", pool=request.pool).get()
    page.locator(f"#request-{other.pk}").get_by_text("0 of 62 free").wait_for()
    assert "allocated 2 instances" in decided.inner_text()
    screenshot("capacity-4-partially-approved")
    page.goto(f"{live_server.url}/program/capacity/pools/{request.pool_id}/")
    assert "Peak allocated: 62 instances; free at the peak: 0." in page.content()
    screenshot("capacity-5-pool-timeline")

    log_in(page, live_server, "tenant1")
    allocation = Allocation.objects.get(request=request)
    table = page.locator("#home-allocations")
    assert table.get_by_role("cell", name=allocation.number, exact=True).is_visible()  # A-209, a request is R-…
    assert f"{2 * 60 * 24:,}" in table.inner_text()  # 2 instances × 60 days × 24 h granted
    screenshot("capacity-6-tenant-sees-allocation")


def test_a_double_click_submits_the_request_form_once(page, live_server):
    call_command("load_demo")
    log_in(page, live_server, "tenant1")
    page.get_by_role("link", name="Capacity", exact=True).click()
    page.get_by_role("link", name="Request capacity").click()
    page.wait_for_function("() => document.readyState === 'complete'")  # deferred scripts have run
    # Count the submissions that would leave the page; stop them here so the count is all that happens.
    sent = page.evaluate(
        """() => {
            let sent = 0;
            window.addEventListener("submit", (event) => {
                if (!event.defaultPrevented) sent += 1;
                event.preventDefault();
            });
            const button = document.querySelector("button[name=submit]");
            button.click();
            button.click();
            return sent;
        }"""
    )
    assert sent == 1
    assert page.locator("form[aria-busy=true]").count() == 1


def test_a_refused_decision_stays_in_the_queue_with_its_error(page, live_server, screenshot):
    call_command("load_demo")
    request = CapacityRequest.objects.filter(status=CapacityRequest.Status.SUBMITTED).order_by("pk").first()
    log_in(page, live_server, "manager")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Capacity review").click()  # the top bar's
    row = page.locator(f"#request-{request.pk}")
    row.get_by_role("button", name="Reject").click()  # rejecting needs a comment
    row.get_by_role("alert").get_by_text("Tell the tenant why").wait_for()
    row.get_by_label("Instances").fill(str(request.instance_count + 1))
    row.get_by_role("button", name="Approve").click()
    row.get_by_role("alert").get_by_text("more than the").wait_for()
    screenshot("capacity-7-refused-decision")
    request.refresh_from_db()
    assert request.status == CapacityRequest.Status.SUBMITTED
