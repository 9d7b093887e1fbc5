"""The main flows work from the keyboard alone: a tenant requests capacity and opens a support case, a program
manager approves the request — Tab to move (never a click, never a selector that focuses for the test), typing into
the field that has the focus, Enter or Space to act. Each step also checks that the focus is visible (an outline
or a box shadow), as WCAG 2.4.7 asks."""

from datetime import date, timedelta

import pytest
from django.core.management import call_command

from tenants.models import CapacityRequest
from tests.browser.test_usage import log_in
from workloads.support.models import SupportCase

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("catalog")]

MAX_TABS = 120
FOCUSED = """() => {
    const e = document.activeElement;
    if (!e || e === document.body) return null;
    const style = getComputedStyle(e);
    const visible = (style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0) || style.boxShadow !== 'none';
    return {tag: e.tagName.toLowerCase(), name: e.name || '', text: (e.innerText || e.value || '').trim(),
            label: e.labels && e.labels[0] ? e.labels[0].innerText.trim() : '', visible};
}"""


def tab_to(page, *, text: str = "", name: str = "", label: str = "") -> dict:
    """Press Tab until the focus is on the element with this text (a link or button), field name or label."""
    for _ in range(MAX_TABS):
        page.keyboard.press("Tab")
        focused = page.evaluate(FOCUSED)
        if focused and (
            (text and focused["text"].startswith(text))
            or (name and focused["name"] == name)
            or (label and focused["label"].startswith(label))
        ):
            assert focused["visible"], f"the focus on {focused} is not visible"
            return focused
    raise AssertionError(f"Tab never reached {text or name or label!r}")


def type_into(page, value: str, **target) -> None:
    tab_to(page, **target)
    page.keyboard.press("Control+A")
    page.keyboard.type(value)


def test_request_approve_and_open_a_case_from_the_keyboard(page, live_server):
    call_command("load_demo")
    first = (date.today().replace(day=1) + timedelta(days=32)).replace(day=1)
    last = first + timedelta(days=29)

    page.set_default_navigation_timeout(30_000)  # the first request warms the live server up
    log_in(page, live_server, "tenant1", "en")
    page.wait_for_url("**/orgs/sakura-lab/")
    tab_to(page, text="Request capacity")  # on the team's home
    page.keyboard.press("Enter")
    page.wait_for_url("**/capacity/new/")
    tab_to(page, name="pool")
    page.keyboard.press("Home")  # the menu's first pool, p5.48xlarge in us-east-1
    type_into(page, "2", name="instance_count")
    tab_to(page, name="starts_on")
    page.keyboard.type(first.strftime("%m%d%Y"))  # a date field takes its parts typed in the locale's order
    tab_to(page, name="ends_on")
    page.keyboard.type(last.strftime("%m%d%Y"))
    type_into(page, "Keyboard-only request for a 2-node ablation.", name="justification")
    tab_to(page, text="Submit for review")
    page.keyboard.press("Enter")
    page.get_by_text("submitted for review").wait_for()
    request = CapacityRequest.objects.get(justification="Keyboard-only request for a 2-node ablation.")
    assert request.status == CapacityRequest.Status.SUBMITTED and (request.starts_on, request.ends_on) == (first, last)

    tab_to(page, text="Support")
    page.keyboard.press("Enter")
    page.wait_for_url("**/support/")
    tab_to(page, text="Open a case")
    page.keyboard.press("Enter")
    page.wait_for_url("**/support/new/")
    type_into(page, "Keyboard-only case", name="title")
    tab_to(page, name="category")
    page.keyboard.press("End")  # the last category, "Other"
    type_into(page, "Opened without a mouse.", name="description")
    tab_to(page, text="Open case")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{live_server.url}/support/*/")
    case = SupportCase.objects.get(title="Keyboard-only case")
    assert case.category == SupportCase.Category.OTHER

    page.context.clear_cookies()
    log_in(page, live_server, "manager", "en")
    page.wait_for_url("**/program/")
    page.goto(f"{live_server.url}/program/capacity/review/")
    for _ in range(MAX_TABS):  # to this request's Approve button: the queue lists others before it
        focused = tab_to(page, text="Approve")
        if page.evaluate("() => document.activeElement.closest('[id^=request-]').id") == f"request-{request.pk}":
            break
    page.keyboard.press("Enter")
    page.locator(f"#decided-{request.pk}").get_by_text("Approved").wait_for()
    request.refresh_from_db()
    assert request.status == CapacityRequest.Status.APPROVED and focused["tag"] == "button"
