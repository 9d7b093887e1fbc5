import pytest
from django.core.management import call_command

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("catalog")]


def log_in(page, live_server, username: str) -> None:
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("demo")
    page.get_by_role("button", name="Log in").click()


def test_tenant_sees_its_org_and_not_another(page, live_server, screenshot):
    call_command("load_demo", "--start", "2026-10-01")
    failed = []  # every asset the pages load (styles, scripts, htmx, the icon) must be found
    page.on("response", lambda r: failed.append(r.url) if r.status >= 400 and "/orgs/" not in r.url else None)
    log_in(page, live_server, "tenant1")

    page.wait_for_url(f"{live_server.url}/orgs/sakura-lab/")
    assert page.get_by_role("heading", level=1).inner_text() == "Sakura Language Lab"
    assert page.get_by_role("navigation").get_by_role("link", name="Sakura Language Lab").is_visible()
    assert page.get_by_role("link", name="Kitsune AI").count() == 0
    screenshot("tenant1-org-home")

    response = page.goto(f"{live_server.url}/orgs/kitsune-ai/")
    assert response.status == 404
    assert page.get_by_role("heading", level=1).inner_text() == "Not found"
    assert "Kitsune AI" not in page.content()
    screenshot("tenant1-other-org-404")
    assert failed == []

    api = page.goto(f"{live_server.url}/api/v1/organizations/kitsune-ai/?format=json")
    assert api.status == 404


def test_manager_sees_twelve_orgs_and_switches_to_japanese(page, live_server, screenshot):
    call_command("load_demo", "--start", "2026-10-01")
    log_in(page, live_server, "manager")

    page.wait_for_url(f"{live_server.url}/program/")
    page.get_by_role("link", name="Pools and organizations").click()  # the landing page links them
    page.wait_for_url(f"{live_server.url}/program/organizations/")
    assert page.get_by_role("heading", name="12 organizations").is_visible()
    assert page.locator("table").nth(1).locator("tbody tr").count() == 12
    screenshot("manager-program-overview")

    page.locator("details.user-menu summary").click()  # the language is in the person's menu
    with page.expect_navigation():
        page.get_by_label("Language").select_option("ja")
    assert page.get_by_role("heading", name="キャパシティプール").is_visible()
    screenshot("manager-program-overview-ja")
