"""Sign-in with the institution, the whole way in Chromium: the portal's login page, the real OpenID provider's
own pages (tests/sso/provider.js), and back. Screenshots in test-artifacts/."""

from urllib.parse import urljoin

import pytest
from django.contrib.auth import get_user_model
from django.utils.csp import CSP

from portal.settings import origins
from tenants.models import Membership
from tenants.sso import provider as sso_provider
from tenants.sso.models import OidcIdentity
from tests.factories import OrganizationFactory
from tests.sso.openid_provider import CLIENT_ID, CLIENT_SECRET, running_provider

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PAGE_SCROLLS_SIDEWAYS = "() => document.documentElement.scrollWidth - window.innerWidth"


@pytest.fixture(scope="session")
def browser_provider(live_server):
    with running_provider(f"{live_server.url}/oidc/callback/") as provider:
        yield provider


def use(settings, provider) -> None:
    settings.OIDC_ISSUER_URL = provider.issuer
    settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
    settings.OIDC_PROVIDER_NAME = "Test University"
    settings.PROGRAM_CONTACT_EMAIL = "fm-program@example.jp"
    # As settings.py derives it from OIDC_ISSUER_URL at start: signing out posts to the portal, which redirects to
    # the provider's end-session endpoint, and Chromium holds that redirect to the page's form-action.
    settings.SECURE_CSP = {**settings.SECURE_CSP, "form-action": [CSP.SELF, *origins(provider.issuer)]}
    sso_provider.forget()


@pytest.fixture
def sso(settings, browser_provider):
    browser_provider.configure()
    use(settings, browser_provider)
    yield browser_provider
    sso_provider.forget()


@pytest.fixture
def orgs(db):
    return OrganizationFactory(slug="sakura-lab", name="Sakura Language Lab"), OrganizationFactory(
        slug="kitsune-ai", name="Kitsune AI"
    )


def sign_in_at_provider(page, live_server, subject: str) -> None:
    """From the portal's login page through the provider's login and consent pages (those it shows)."""
    page.goto(f"{live_server.url}/login/")
    page.get_by_role("link", name="Sign in with Test University").click()
    page.locator("input[name=login]").fill(subject)
    page.locator("input[name=password]").fill("any password")
    page.get_by_role("button", name="Sign-in").click()
    page.get_by_role("button", name="Continue").click()


def test_sign_in_places_the_person_and_the_next_sign_in_follows_their_groups(page, live_server, sso, orgs, screenshot):
    sso.account(
        "alice-0001",
        email="alice@uni.example",
        email_verified=True,
        name="Alice Tanaka",
        groups=["fmportal:sakura-lab:member"],
    )
    page.goto(f"{live_server.url}/login/")
    assert page.locator("input[name=password]").is_visible()  # local accounts (the demo's) still sign in
    assert page.evaluate(PAGE_SCROLLS_SIDEWAYS) <= 0
    screenshot("sso-login-page")

    sign_in_at_provider(page, live_server, "alice-0001")
    page.wait_for_url(f"{live_server.url}/orgs/sakura-lab/")
    assert page.get_by_role("heading", level=1).inner_text() == "Sakura Language Lab"
    user = OidcIdentity.objects.get(subject="alice-0001").user
    assert list(Membership.objects.filter(user=user).values_list("organization__slug", "role")) == [
        ("sakura-lab", "member")
    ]
    screenshot("sso-signed-in")

    # The institution makes Alice an admin of Sakura and a member of Kitsune. She signs out: of the portal, then,
    # confirming on the provider's page, of the provider (RP-Initiated Logout), which sends her back to the login
    # page. The next sign-in asks her who she is again, and follows her groups.
    sso.account(
        "alice-0001",
        email="alice@uni.example",
        email_verified=True,
        groups=["fmportal:sakura-lab:admin", "fmportal:kitsune-ai:member"],
    )
    page.locator("details.user-menu summary").click()
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(f"{sso.issuer}/session/end**")
    screenshot("sso-sign-out-at-provider")
    page.get_by_role("button", name="Yes, sign me out").click()
    page.wait_for_url(f"{live_server.url}/login/**")
    sign_in_at_provider(page, live_server, "alice-0001")  # its login page again
    page.wait_for_url(f"{live_server.url}/")
    assert page.get_by_role("link", name="Kitsune AI").count() >= 1
    roles = dict(Membership.objects.filter(user=user).values_list("organization__slug", "role"))
    assert roles == {"sakura-lab": "admin", "kitsune-ai": "member"}
    screenshot("sso-second-sign-in")


def test_a_person_the_groups_place_nowhere_is_told_whom_to_ask(page, live_server, sso, orgs, screenshot):
    sso.account("bob", email="bob@uni.example", email_verified=True, groups=["fmportal:sakura-lab:owner"])
    sign_in_at_provider(page, live_server, "bob")
    page.wait_for_url(f"{live_server.url}/oidc/callback/**")
    assert page.get_by_role("heading", level=1).inner_text() == "You are not yet in any organization of the program"
    assert page.get_by_role("link", name="fm-program@example.jp").is_visible()
    assert page.evaluate(PAGE_SCROLLS_SIDEWAYS) <= 0
    screenshot("sso-not-placed")
    assert not get_user_model().objects.exists()

    page.context.add_cookies([{"name": "django_language", "value": "ja", "url": live_server.url}])
    page.goto(f"{live_server.url}/login/")
    page.get_by_role("link", name="Test University でサインイン").click()
    page.wait_for_url(f"{live_server.url}/oidc/callback/**")
    assert page.get_by_role("heading", level=1).inner_text() == "まだプログラムのどの組織にも所属していません"
    assert page.evaluate(PAGE_SCROLLS_SIDEWAYS) <= 0
    screenshot("sso-not-placed-ja")


def on_return_to_portal(page, provider, live_server, change) -> None:
    """Have `change(location)` rewrite the provider's redirect back to the portal. Chromium routes only the first
    request of a redirect chain (the form posted on the provider's page), so the test follows the chain's hops
    itself, in the browser's context (its cookies), and hands the browser the last one."""
    callback = f"{live_server.url}/oidc/callback/"

    def handle(route):
        if route.request.method != "POST":
            route.continue_()
            return
        url, response = route.request.url, route.fetch(max_redirects=0)
        location = response.headers.get("location")
        while location is not None:
            location = urljoin(url, location)
            if location.startswith(callback):
                location = change(location)
                break
            hop = page.request.get(location, max_redirects=0)
            if hop.status not in (301, 302, 303, 307, 308):
                break  # a page of the provider's (consent): the browser goes there itself
            url, location = location, hop.headers.get("location")
        if location is None:
            route.fulfill(response=response)
        else:
            route.fulfill(status=303, headers={"location": location})

    page.route(f"{provider.issuer}/interaction/**", handle)


def refused(page, live_server) -> None:
    page.wait_for_url(f"{live_server.url}/oidc/callback/**")
    assert page.get_by_role("heading", level=1).inner_text() == "Sign-in not completed"
    assert not get_user_model().objects.exists() and not Membership.objects.exists()


def test_a_tampered_state_is_refused_and_creates_nothing(page, live_server, sso, orgs, screenshot):
    sso.account("carol", email="carol@uni.example", email_verified=True, groups=["fmportal:sakura-lab:member"])
    on_return_to_portal(page, sso, live_server, lambda location: location.replace("state=", "state=x"))
    sign_in_at_provider(page, live_server, "carol")
    refused(page, live_server)
    screenshot("sso-refused")


def test_an_id_token_for_another_audience_is_refused(page, live_server, sso, orgs):
    sso.account("dave", email="dave@uni.example", email_verified=True, groups=["fmportal:sakura-lab:member"])
    sso.configure(idTokenAudience="another-application")
    sign_in_at_provider(page, live_server, "dave")
    refused(page, live_server)


def test_an_expired_id_token_is_refused(page, live_server, sso, orgs, settings):
    settings.OIDC_CLOCK_SKEW_SECONDS = 0
    sso.account("erin", email="erin@uni.example", email_verified=True, groups=["fmportal:sakura-lab:member"])
    sso.configure(idTokenTtl=1, tokenDelayMs=2100)  # a one-second token reaching the portal two seconds late
    sign_in_at_provider(page, live_server, "erin")
    refused(page, live_server)


def test_a_provider_that_goes_down_gets_a_clear_page_and_nothing_is_created(
    page, live_server, settings, orgs, screenshot
):
    with running_provider(f"{live_server.url}/oidc/callback/") as provider:
        use(settings, provider)
        provider.account("frank", email="frank@uni.example", email_verified=True, groups=["fmportal:sakura-lab:member"])

        def provider_goes_down(location: str) -> str:
            provider.stop()  # between the person's return and the portal's token request
            return location

        on_return_to_portal(page, provider, live_server, provider_goes_down)
        sign_in_at_provider(page, live_server, "frank")
        page.wait_for_url(f"{live_server.url}/oidc/callback/**")
    assert page.get_by_role("heading", level=1).inner_text() == "Test University is not answering"
    screenshot("sso-provider-down")
    assert not get_user_model().objects.exists()

    sso_provider.forget()
    page.goto(f"{live_server.url}/login/")
    page.get_by_role("link", name="Sign in with Test University").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Test University is not answering"
    sso_provider.forget()


def test_an_invited_person_with_no_program_group_joins_from_the_link(page, live_server, sso, orgs, screenshot):
    """The invitation is the permission to join: from its link, "Sign in with Test University" lands in the org."""
    import re

    from django.core import mail

    from tenants.members.services import invite
    from tests.factories import MembershipFactory

    sakura = orgs[0]
    admin = MembershipFactory(organization=sakura, role="admin").user
    invite(user=admin, organization=sakura, email="alice@uni.example", role="member")
    link = re.search(r"(/invitations/\S+/)", mail.outbox[-1].body).group(1)
    sso.account("alice-0002", email="alice@uni.example", email_verified=True, groups=["unrelated"])

    page.goto(f"{live_server.url}{link}")
    screenshot("sso-invitation-page")
    page.get_by_role("link", name="Sign in with Test University").click()
    page.locator("input[name=login]").fill("alice-0002")
    page.locator("input[name=password]").fill("any password")
    page.get_by_role("button", name="Sign-in").click()
    page.get_by_role("button", name="Continue").click()
    page.wait_for_url(f"{live_server.url}/orgs/sakura-lab/")
    assert "Welcome to Sakura Language Lab: you joined as member." in page.locator("body").inner_text()
    screenshot("sso-invitation-joined")
    user = OidcIdentity.objects.get(subject="alice-0002").user
    assert list(Membership.objects.filter(user=user).values_list("organization__slug", "role", "source")) == [
        ("sakura-lab", "member", "local")
    ]
    page.goto(f"{live_server.url}/orgs/sakura-lab/members/")
    assert page.locator('tr[data-username="alice"] td[data-source="local"]').count() == 1
    screenshot("sso-members-granted-by")
