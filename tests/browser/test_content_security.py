"""The Content-Security-Policy holds on every page (docs/operations/security.md): a program manager and a tenant
admin, in English and in Japanese, open every page the portal links to from its URL conf's pages, breadth first,
each shape of address once (`/workloads/12/` stands for every workload), with its charts drawn and hovered, and the
browser refuses nothing. The watcher in conftest.py fails any browser test on a violation; this one makes sure the
walk reaches every page, including the detail pages no other test opens in both languages. Django admin and the
API documentation (Swagger UI) are walked by a superuser."""

import re
from collections import deque
from datetime import date, timedelta
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse

from tests.browser.test_charts import DRAWN
from tests.browser.test_layout import PAGES
from tests.browser.test_usage import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("catalog")]

# Not followed: leaving the session, files and machine endpoints, and Django admin (walked on its own, below).
NOT_FOLLOWED = re.compile(r"^/(logout|i18n|admin|api|static|healthz|metrics|oidc)/?|\.(csv|json|txt|svg|png)$|export")
MAX_PAGES = 70  # the demo's pages come to about 50 shapes per person; a bound, should a link ever loop


@pytest.fixture
def demo(db):
    call_command("load_demo", "--start", (date.today() - timedelta(days=45)).isoformat(), verbosity=0)
    call_command("load_demo_workloads", verbosity=0)
    call_command("load_demo_usage", verbosity=0)
    call_command("load_demo_training", verbosity=0)


def shape(url: str) -> str:
    """The page's kind: its path with numbers and the organization blanked, without the query (a sort, a filter or
    another period is the same template): `/orgs/O/workloads/N/`. One page of each kind is enough."""
    path = re.sub(r"\d+", "N", urlsplit(url).path)
    return re.sub(r"^/orgs/[^/]+/", "/orgs/O/", path)


def visit(page, url: str) -> None:
    """Open the page, let its charts draw and show a tooltip each (ECharts' own tooltip markup broke the policy)."""
    page.goto(url)  # until `load`: the deferred scripts have run, htmx and the charts have started
    if page.locator("[data-chart]").count():
        page.wait_for_function(DRAWN)
        for chart in page.locator("[data-chart]").all():
            chart.scroll_into_view_if_needed()
            area = chart.bounding_box()
            page.mouse.move(area["x"] + area["width"] * 0.6, area["y"] + area["height"] * 0.55)
            page.wait_for_timeout(50)
        page.mouse.move(0, 0)


def walk(page, base: str, start: list[str]) -> set[str]:
    """Breadth first from `start`, every same-site link once per shape; returns the shapes visited."""
    seen, visited, queue = set(), set(), deque(start)
    while queue and len(visited) < MAX_PAGES:
        path = queue.popleft()
        if shape(path) in seen:
            continue
        seen.add(shape(path))
        probe = page.request.get(base + path, max_redirects=0)
        if probe.status != 200 or "text/html" not in probe.headers.get("content-type", ""):
            continue  # not this person's page (403, 404), a redirect, a form that only takes a POST, a file
        visit(page, base + path)
        visited.add(shape(path))
        for href in page.eval_on_selector_all("a[href]", "links => links.map(a => a.href)"):
            parts = urlsplit(href)
            if href.startswith(base) and not NOT_FOLLOWED.search(parts.path):
                queue.append(parts.path + (f"?{parts.query}" if parts.query else ""))
    return visited


def test_every_page_keeps_to_the_content_security_policy(page, live_server, demo, security_policy_violations):
    """One test for the four walks: the demo takes longer to load than a walk to run."""
    start = ["/"] + [
        reverse(name, kwargs={"org_slug": "sakura-lab"} if takes_org else None) for name, takes_org in PAGES
    ]
    for username, language in [("manager", "en"), ("manager", "ja"), ("tenant1", "en"), ("tenant1", "ja")]:
        page.context.clear_cookies()
        log_in(page, live_server, username, language)
        visited = walk(page, live_server.url, start)
        assert len(visited) >= 20, (username, language, sorted(visited))
        assert "/workloads/N/" in visited, (username, language, sorted(visited))  # a detail page was reached
        assert security_policy_violations == [], f"{username} in {language}"


def test_admin_and_the_api_documentation_keep_to_the_policy(page, live_server, demo, security_policy_violations):
    get_user_model().objects.create_superuser("root", "root@example.jp", "demo")
    log_in(page, live_server, "root", "en")
    for path in (
        "/admin/",
        "/admin/tenants/organization/",
        "/admin/tenants/organization/add/",
        "/admin/auth/user/1/change/",
    ):
        visit(page, live_server.url + path)
        assert page.locator("#content").count() == 1, path
    visit(page, live_server.url + "/api/docs/")
    page.locator(".swagger-ui .opblock").first.wait_for()  # Swagger UI started and read the schema
    page.locator(".swagger-ui .opblock-summary").first.click()  # an operation opened
    page.wait_for_timeout(200)
    assert security_policy_violations == []


def test_the_watcher_sees_what_the_browser_refuses(page, live_server, security_policy_violations):
    """The watcher every browser test runs under (conftest.py) does see a refusal: a style attribute set from script
    and an inline script added to the page, on the 404 page (the portal's own)."""
    page.goto(f"{live_server.url}/no-such-page/")
    page.evaluate("document.body.setAttribute('style', 'color: red')")
    page.evaluate("document.body.appendChild(document.createElement('script')).textContent = 'window.ran = 1'")
    page.wait_for_timeout(300)
    assert page.evaluate("window.ran") is None  # refused
    assert any("style-src-attr" in violation for violation in security_policy_violations), security_policy_violations
    assert any("script-src-elem" in violation for violation in security_policy_violations), security_policy_violations
    security_policy_violations.clear()  # seen: this test's own, not the portal's


def test_what_inline_handlers_did_the_page_script_does(page, live_server):
    """The handlers the policy refuses in markup live in static/js/portal.js: a form with data-confirm asks first
    (Cancel keeps the request, OK withdraws it), and a new key's field selects itself when focused."""
    from tenants.models import CapacityPool, CapacityRequest, Organization
    from tests.factories import CapacityRequestFactory

    call_command("load_demo", verbosity=0)
    request = CapacityRequestFactory(
        organization=Organization.objects.get(slug="sakura-lab"), pool=CapacityPool.objects.first()
    )
    log_in(page, live_server, "tenant1", "en")
    page.goto(f"{live_server.url}{reverse('capacity-request', args=['sakura-lab', request.pk])}")
    questions = []
    page.once("dialog", lambda dialog: (questions.append(dialog.message), dialog.dismiss()))
    page.get_by_role("button", name="Withdraw").click()
    page.wait_for_timeout(300)
    assert questions == ["Withdraw this request?"]
    request.refresh_from_db()
    assert request.status == CapacityRequest.Status.SUBMITTED  # cancelled: nothing sent
    page.once("dialog", lambda dialog: dialog.accept())
    with page.expect_navigation():
        page.get_by_role("button", name="Withdraw").click()
    request.refresh_from_db()
    assert request.status == CapacityRequest.Status.WITHDRAWN

    page.goto(f"{live_server.url}{reverse('account-tokens')}")
    page.get_by_label("Name").fill("ci")
    page.get_by_role("button", name="Create token").click()
    key = page.get_by_label("New key")
    key.focus()
    start, end, length = page.evaluate(
        "() => [document.activeElement.selectionStart, document.activeElement.selectionEnd, "
        "document.activeElement.value.length]"
    )
    assert (start, end) == (0, length) and length > 20  # the whole key, ready to copy
