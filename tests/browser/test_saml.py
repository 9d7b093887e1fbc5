"""SAML sign-in the whole way in Chromium: the portal's login page, the real IdP's login page (pysaml2's IdP,
tests/sso/saml_provider.py, on 127.0.0.1 while the portal is on localhost: another site, as a federation's IdP is),
its answer posted to the portal, and the organization. Screenshots in test-artifacts/."""

import pytest
import requests

from tenants.models import Membership
from tenants.sso.models import OidcIdentity
from tenants.sso.saml import metadata as saml_metadata
from tests.factories import OrganizationFactory
from tests.sso.saml_provider import running_idp

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
PAGE_SCROLLS_SIDEWAYS = "() => document.documentElement.scrollWidth - window.innerWidth"


@pytest.fixture(scope="session")
def browser_idp():
    with running_idp() as idp:
        yield idp


@pytest.fixture
def saml(settings, live_server, browser_idp):
    browser_idp.answer_with()
    settings.SSO_PROVIDERS = [
        {"key": "test-idp", "name": "Test University", "protocol": "saml", "trust_email": True,
         "metadata_url": f"{browser_idp.url}/metadata"}
    ]  # fmt: skip
    saml_metadata.forget()
    browser_idp.sp_metadata = [requests.get(f"{live_server.url}/saml/test-idp/metadata/", timeout=10).text]
    yield browser_idp
    saml_metadata.forget()


def test_sign_in_through_the_saml_idp_lands_on_the_organization(page, live_server, saml, screenshot):
    OrganizationFactory(slug="sakura-lab", name="Sakura Language Lab")
    saml.user(
        "alice",
        eduPersonPrincipalName="alice@uni.example",
        mail="alice@uni.example",
        displayName="Alice Tanaka",
        isMemberOf=["fmportal:sakura-lab:member"],
    )
    answers = []  # the posts to the ACS: the IdP's, then the portal's own page's (the session cookie is SameSite=Lax)
    page.on("request", lambda r: answers.append(r) if r.method == "POST" and "/saml/test-idp/acs/" in r.url else None)
    page.goto(f"{live_server.url}/login/")
    page.get_by_role("link", name="Sign in with Test University").click()
    page.wait_for_url(f"{saml.url}/sso/redirect**")
    page.get_by_label("User").fill("alice")
    page.get_by_label("Password").fill("any password")
    screenshot("saml-idp-login")
    page.get_by_role("button", name="Sign in").click()

    page.wait_for_url(f"{live_server.url}/orgs/sakura-lab/")
    assert page.get_by_role("heading", level=1).inner_text() == "Sakura Language Lab"
    assert page.evaluate(PAGE_SCROLLS_SIDEWAYS) <= 0
    screenshot("saml-signed-in")
    assert [r.headers.get("origin") for r in answers] == [saml.url, live_server.url]
    user = OidcIdentity.objects.get(subject="alice@uni.example").user
    assert (user.first_name, user.email) == ("Alice Tanaka", "alice@uni.example")
    assert list(Membership.objects.filter(user=user).values_list("organization__slug", "role")) == [
        ("sakura-lab", "member")
    ]


def test_an_idp_whose_metadata_is_down_gets_a_clear_page(page, live_server, saml, settings, screenshot):
    settings.SSO_PROVIDERS = [{**settings.SSO_PROVIDERS[0], "metadata_url": "http://127.0.0.1:9/metadata"}]
    page.goto(f"{live_server.url}/login/")
    page.get_by_role("link", name="Sign in with Test University").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Test University is not answering"
    screenshot("saml-idp-down")
