"""Every page a person lands on, in Chromium at 1280 px, in English and Japanese, as program staff and as a tenant:
no page scrolls sideways, no table or chart overflows its card (a wide table scrolls inside its own box), and the
top bar is one line. The pages are found by walking the URL conf (every route that takes no argument, or only the
org slug), so a new page is measured without anyone remembering to add it. Screenshots in test-artifacts/."""

from datetime import date, timedelta

import pytest
from django.core.management import call_command
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from tests.browser.test_usage import OVERFLOWING, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("catalog")]

SKIPPED_NAMESPACES = {"admin"}
# Not pages a person reads in the browser: sign-in plumbing, files, machine endpoints.
NOT_PAGES = {"login", "logout", "set_language", "healthz", "api-docs", "api-schema", "metrics"}


def _page_routes(patterns, namespace: str = "", prefix: str = ""):
    for entry in patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            if entry.namespace in SKIPPED_NAMESPACES:
                continue
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from _page_routes(entry.url_patterns, inner, route)
        elif isinstance(entry, URLPattern) and entry.name:
            kwargs = set(entry.pattern.regex.groupindex)
            if route.startswith("api/") or kwargs - {"org_slug"} or entry.name in NOT_PAGES:
                continue
            if route.endswith((".csv", ".json", "print/")) or "export" in entry.name:
                continue
            yield f"{namespace}{entry.name}", bool(kwargs)


PAGES = sorted(set(_page_routes(get_resolver().url_patterns)))

# The one line the top bar keeps: its height with a single row of links.
TOPBAR_WRAPS = "() => document.querySelector('header.topbar').getBoundingClientRect().height > 64"
PAGE_SCROLLS_SIDEWAYS = "() => document.documentElement.scrollWidth - window.innerWidth"


@pytest.fixture
def demo(db):
    call_command("load_demo", "--start", (date.today() - timedelta(days=45)).isoformat())
    call_command("load_demo_workloads")
    call_command("load_demo_usage")


def test_the_walk_finds_the_list_pages():
    names = {name for name, _ in PAGES}
    assert {"allocations", "records:tracking", "clusters:list", "support:list", "capacity", "audit-log"} <= names


@pytest.mark.parametrize("language", ["en", "ja"])
@pytest.mark.parametrize(("username", "org_slug"), [("manager", "sakura-lab"), ("tenant1", "sakura-lab")])
def test_no_page_overflows_at_1280(page, live_server, screenshot, demo, language, username, org_slug):
    log_in(page, live_server, username, language)
    problems, visited = [], 0
    for name, takes_org in PAGES:
        url = reverse(name, kwargs={"org_slug": org_slug} if takes_org else None)
        probe = page.request.get(f"{live_server.url}{url}", max_redirects=0)
        if probe.status != 200 or "text/html" not in probe.headers.get("content-type", ""):
            continue  # not this role's page (403), a redirect, or a form that only takes a POST
        page.goto(f"{live_server.url}{url}")
        page.wait_for_load_state("networkidle")
        visited += 1
        if (sideways := page.evaluate(PAGE_SCROLLS_SIDEWAYS)) > 0:
            problems.append(f"{url}: the page scrolls {sideways} px sideways")
        if overflowing := page.evaluate(OVERFLOWING):
            problems.append(f"{url}: overflows its card: {overflowing}")
        if page.evaluate(TOPBAR_WRAPS):
            problems.append(f"{url}: the top bar wraps")
        if sideways > 0 or overflowing:
            screenshot(f"layout-{username}-{language}-{name.replace(':', '-')}")
    assert visited >= 10
    assert problems == [], "\n".join(problems)


# The tallest workload name in the tracking table, in lines of its own text.
NAME_LINES = """() => Math.max(...[...document.querySelectorAll('table.tracking td.name > a')].map(a => {
    const lineHeight = parseFloat(getComputedStyle(a).lineHeight);
    return Math.round(a.getBoundingClientRect().height / lineHeight);
}))"""


@pytest.mark.parametrize("language", ["en", "ja"])
def test_workload_names_read_on_one_line_in_the_tracking_view(page, live_server, screenshot, demo, language):
    """The demo's names (20 characters at most) fit their column; before, ten columns squeezed them onto two
    or three lines."""
    log_in(page, live_server, "manager", language)
    page.goto(f"{live_server.url}{reverse('records:tracking')}")
    assert page.locator("table.tracking td.name").count() >= 4
    screenshot(f"layout-tracking-{language}")
    assert page.evaluate(NAME_LINES) == 1


def test_the_persons_menu_switches_language_and_logs_out(page, live_server, demo):
    log_in(page, live_server, "manager", "en")
    page.goto(f"{live_server.url}{reverse('program-overview')}")
    menu = page.locator("details.user-menu")
    assert not menu.locator("a", has_text="API tokens").is_visible()  # folded away until asked for
    menu.locator("summary").click()
    with page.expect_navigation():
        menu.locator("select[name=language]").select_option("ja")
    assert page.locator("html").get_attribute("lang") == "ja"
    page.locator("details.user-menu summary").click()
    page.mouse.click(5, 300)  # a click elsewhere folds it again
    assert not page.locator("details.user-menu a", has_text="API トークン").is_visible()
    page.locator("details.user-menu summary").click()
    page.get_by_role("button", name="ログアウト").click()
    page.wait_for_url("**/login/")
