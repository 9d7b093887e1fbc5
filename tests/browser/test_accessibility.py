"""The pages training progress shows on pass axe-core (Deque's accessibility rules engine, pinned in
tests/browser/package.json, installed by `.ci/run`) with no serious or critical violation, at 1280 px and at 390 px,
and never scroll sideways: the workload page, the log upload, an organization's usage, the landing page and the
weekly review, in English and Japanese."""

import pytest
from django.core.management import call_command

from tests.browser.conftest import SERIOUS
from tests.browser.test_usage import log_in
from workloads.records.models import Workload

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("catalog")]

SIDEWAYS = "() => document.documentElement.scrollWidth - window.innerWidth"


@pytest.mark.parametrize("width", [1280, 390])
def test_the_training_pages_pass_axe_and_fit(page, live_server, axe, width):
    call_command("load_demo", verbosity=0)
    call_command("load_demo_workloads", verbosity=0)
    call_command("load_demo_training", verbosity=0)
    workload = Workload.objects.get(name="sakura-70b-pretrain")
    page.set_viewport_size({"width": width, "height": 844})
    found = {}
    visits = [
        ("tenant1", "en", [f"/workloads/{workload.pk}/", f"/workloads/{workload.pk}/progress/upload/"]),
        ("tenant1", "ja", [f"/workloads/{workload.pk}/", "/orgs/sakura-lab/usage/"]),
        ("manager", "en", ["/program/", "/review/"]),
    ]
    for username, language, urls in visits:
        page.context.clear_cookies()
        log_in(page, live_server, username, language)
        for url in urls:
            page.goto(live_server.url + url)
            page.evaluate(axe)  # not a <script> tag: the page's Content-Security-Policy refuses inline scripts
            problems = page.evaluate(SERIOUS)
            if page.evaluate(SIDEWAYS) > 0:
                problems.append(f"scrolls sideways by {page.evaluate(SIDEWAYS)} px")
            if problems:
                found[f"{language} {url}"] = problems
    assert found == {}


def _audit(page, live_server, axe, url: str) -> list[str]:
    page.goto(live_server.url + url)
    page.evaluate(axe)
    problems = page.evaluate(SERIOUS)
    if page.evaluate(SIDEWAYS) > 0:
        problems.append(f"scrolls sideways by {page.evaluate(SIDEWAYS)} px")
    return problems


def _audit_as(page, live_server, axe, language: str, pages: dict[str, list[str]]) -> dict[str, list[str]]:
    """Each user's pages audited in `language`, signed in as that user: {"ja tenant1 /url": problems}."""
    found = {}
    for username, urls in pages.items():
        page.context.clear_cookies()
        log_in(page, live_server, username, language)
        for url in urls:
            if problems := _audit(page, live_server, axe, url):
                found[f"{language} {username} {url}"] = problems
    return found


@pytest.mark.parametrize("width", [1280, 390])
def test_the_sign_in_members_and_service_account_pages_pass_axe_and_fit(page, live_server, axe, settings, width):
    """The login page with two providers, an invitation's page with its sign-in buttons, the members page with its
    origins, the service accounts pages and the allocations page's organization search, in both languages."""
    from django.core import mail

    from tenants.members.services import invite
    from tenants.models import Membership, Organization
    from tenants.service_accounts.services import create_service_account

    call_command("load_demo", verbosity=0)
    settings.SSO_PROVIDERS = [
        {"key": "tokyo-u", "name": "The University of Tokyo", "protocol": "oidc", "issuer": "https://idp.example",
         "client_id": "portal", "client_secret": "secret"},
        {"key": "orcid", "name": "ORCID", "protocol": "oidc", "issuer": "https://orcid.example",
         "client_id": "portal", "client_secret": "secret"},
    ]  # fmt: skip
    sakura = Organization.objects.get(slug="sakura-lab")
    admin = Membership.objects.filter(organization=sakura, role="admin").first().user
    invite(user=admin, organization=sakura, email="newcomer@uni.example", role="member")
    link = next(line for line in mail.outbox[-1].body.splitlines() if "/invitations/" in line).strip()
    account = create_service_account(user=admin, organization=sakura, name="nightly-eval", role="member")
    page.set_viewport_size({"width": width, "height": 844})
    found = {}
    for language in ("en", "ja"):
        page.context.clear_cookies()
        page.context.add_cookies([{"name": "django_language", "value": language, "url": live_server.url}])
        for url in ("/login/", link[link.index("/invitations/") :]):
            if problems := _audit(page, live_server, axe, url):
                found[f"{language} {url}"] = problems
        found |= _audit_as(page, live_server, axe, language, {
            "tenant1": ["/orgs/sakura-lab/members/", "/orgs/sakura-lab/service-accounts/",
                        f"/orgs/sakura-lab/service-accounts/{account.pk}/"],
            "manager": ["/program/capacity/allocations/?org=sakura"],
        })  # fmt: skip
    assert found == {}


def test_the_landing_pages_usage_and_forms_work_on_a_phone(page, live_server, axe):
    """At 390 px, in both languages: both landing pages (the program's week, a team's week), the usage pages and the
    forms a person fills in (capacity request, support case, workload record) fit the screen — a wide table scrolls
    in its own box — and pass axe-core."""
    call_command("load_demo", verbosity=0)
    call_command("load_demo_workloads", verbosity=0)
    call_command("load_demo_usage", verbosity=0)
    page.set_viewport_size({"width": 390, "height": 844})
    found = {}
    for language in ("en", "ja"):
        found |= _audit_as(page, live_server, axe, language, {
            "tenant1": ["/orgs/sakura-lab/", "/orgs/sakura-lab/usage/", "/orgs/sakura-lab/capacity/new/",
                        "/orgs/sakura-lab/support/new/", "/orgs/sakura-lab/workloads/new/"],
            "manager": ["/program/", "/program/usage/"],
        })  # fmt: skip
    assert found == {}
