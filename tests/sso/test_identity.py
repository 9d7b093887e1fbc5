"""Identity for a national program, against the real OpenID provider (tests/sso/provider.js): invitations that work
with institution sign-in, the role an admin granted kept over the groups, keys without a key id, only verified
addresses matched, clear pages for an existing account's address and a misconfigured provider, usernames unique
without regard to case, several providers at once, and leavers signed out (back-channel logout, silent re-check)."""

import re
from urllib.parse import urljoin

import jwt
import pytest
import requests
from cryptography.hazmat.primitives.asymmetric import rsa
from django.contrib.auth import get_user_model
from django.core import mail
from django.db import IntegrityError, transaction
from django.urls import reverse

from tenants.members import services as members
from tenants.members.models import Invitation
from tenants.models import AuditEvent, Membership
from tenants.sso import provider as sso_provider
from tenants.sso.models import GrantSource, OidcIdentity, SignInSession
from tests.factories import MembershipFactory, OrganizationFactory, StaffRoleFactory
from tests.sso.conftest import REDIRECT_URI
from tests.sso.openid_provider import CLIENT_ID, CLIENT_SECRET, running_provider

pytestmark = pytest.mark.django_db
User = get_user_model()
LINK = re.compile(r"(/invitations/\S+/)")


@pytest.fixture
def sakura(db):
    return OrganizationFactory(slug="sakura-lab", name="Sakura Language Lab")


@pytest.fixture
def kitsune(db):
    return OrganizationFactory(slug="kitsune-ai", name="Kitsune AI")


def invite(org, email: str, role: str, capture) -> str:
    admin = MembershipFactory(organization=org, role="admin").user
    with capture(execute=True):
        members.invite(user=admin, organization=org, email=email, role=role)
    return LINK.search(mail.outbox[-1].body).group(1)


def sign_in_from(client, provider, start: str, subject: str, redirect_uri: str = REDIRECT_URI):
    """Follow a "Sign in with …" link (`start`, a path of the portal's) through the provider as `subject`."""
    begun = client.get(start)
    assert begun.status_code == 302, begun
    back = provider.answer(begun["Location"], subject, redirect_uri)
    return client.get(back.removeprefix("http://testserver"))


def button(page: str, name: str) -> str:
    found = re.search(r'<a class="button primary" href="([^"]+)">Sign in with ' + re.escape(name), page)
    assert found, page
    return found.group(1).replace("&amp;", "&")


# --- 1, 2: the invitation is the permission to join, and the role it grants is kept ------------------------------


def test_an_invited_person_with_no_program_group_joins_by_signing_in_from_the_link(
    client, openid_provider, sakura, django_capture_on_commit_callbacks
):
    link = invite(sakura, "alice@uni.example", "member", django_capture_on_commit_callbacks)
    openid_provider.account("alice", email="alice@uni.example", email_verified=True, groups=["other:thing"])
    page = client.get(link).content.decode()

    response = sign_in_from(client, openid_provider, button(page, "Test University"), "alice")

    assert (response.status_code, response["Location"]) == (302, "/orgs/sakura-lab/")
    user = OidcIdentity.objects.get(subject="alice").user
    membership = Membership.objects.get(user=user)
    assert (membership.organization, membership.role, membership.source) == (sakura, "member", GrantSource.LOCAL)
    assert Invitation.objects.get().accepted_by == user
    assert AuditEvent.objects.filter(action="member.joined", actor=user).exists()
    assert "Welcome to Sakura Language Lab" in client.get("/orgs/sakura-lab/").content.decode()


def test_the_invited_role_is_not_lowered_by_the_groups_at_the_next_sign_in_and_its_origin_shows(
    client, openid_provider, sakura, django_capture_on_commit_callbacks
):
    openid_provider.account(
        "hana", email="hana@uni.example", email_verified=True, groups=["fmportal:sakura-lab:viewer"]
    )
    link = invite(sakura, "hana@uni.example", "member", django_capture_on_commit_callbacks)
    sign_in_from(client, openid_provider, button(client.get(link).content.decode(), "Test University"), "hana")
    user = OidcIdentity.objects.get(subject="hana").user
    assert Membership.objects.values_list("role", "source").get(user=user) == ("member", "local")

    client.logout()
    sign_in_from(client, openid_provider, "/oidc/authenticate/", "hana")  # the groups still say viewer
    assert Membership.objects.values_list("role", "source").get(user=user) == ("member", "local")

    page = client.get(reverse("members:list", args=["sakura-lab"])).content.decode()
    row = re.search(r'data-username="hana".*?</tr>', page, re.S).group(0)
    assert 'data-source="local"' in row and "the portal" in row
    api = client.get("/api/v1/organizations/sakura-lab/members/").json()
    assert {m["username"]: m["source"] for m in api["results"]}["hana"] == "local"


def test_an_admin_changing_a_role_the_groups_gave_makes_it_the_portals(client, openid_provider, sakura):
    openid_provider.account("ken", email="ken@uni.example", email_verified=True, groups=["fmportal:sakura-lab:viewer"])
    sign_in_from(client, openid_provider, "/oidc/authenticate/", "ken")
    membership = Membership.objects.get(user__username="ken")
    assert membership.source == GrantSource.SSO
    admin = MembershipFactory(organization=sakura, role="admin").user
    members.change_role(user=admin, membership=membership, role="member")
    event = AuditEvent.objects.get(action="member.role_changed")
    assert event.changes == {"role": ["viewer", "member"], "source": ["sso", "local"]}

    client.logout()
    sign_in_from(client, openid_provider, "/oidc/authenticate/", "ken")
    assert Membership.objects.values_list("role", "source").get(pk=membership.pk) == ("member", "local")


# --- 4: only verified addresses are matched ------------------------------------------------------------------------


def test_an_unverified_address_cannot_take_someone_elses_invitation(
    client, openid_provider, sakura, django_capture_on_commit_callbacks
):
    link = invite(sakura, "victor@uni.example", "admin", django_capture_on_commit_callbacks)
    openid_provider.account("mallory", email="victor@uni.example", email_verified=False, groups=[])

    response = sign_in_from(client, openid_provider, button(client.get(link).content.decode(), "Test University"),
                            "mallory")  # fmt: skip

    assert response.status_code == 403
    assert "This invitation is for someone else" in response.content.decode()
    assert not User.objects.filter(email__iexact="victor@uni.example").exists() and not OidcIdentity.objects.exists()
    assert Invitation.objects.get().state == "active"


def test_an_address_sent_without_email_verified_counts_only_for_a_provider_trusted_for_addresses(
    client, openid_provider, sakura, settings, django_capture_on_commit_callbacks
):
    openid_provider.account("rin", email="rin@uni.example", groups=["fmportal:sakura-lab:member"])  # no email_verified
    sign_in_from(client, openid_provider, "/oidc/authenticate/", "rin")
    rin = OidcIdentity.objects.get(subject="rin")
    assert (rin.email, rin.email_verified, rin.user.email) == ("rin@uni.example", False, "")

    settings.OIDC_TRUST_EMAIL = True
    client.logout()
    sign_in_from(client, openid_provider, "/oidc/authenticate/", "rin")
    rin.refresh_from_db()
    assert (rin.email_verified, User.objects.get(pk=rin.user_id).email) == (True, "rin@uni.example")


# --- 3, 5: keys without a key id, an existing account's address, a misconfigured provider, case of usernames ------


def test_an_id_token_without_a_key_id_is_verified_with_the_providers_only_key(client, openid_provider, sakura):
    openid_provider.configure(noKid=True)
    assert "kid" not in requests.get(f"{openid_provider.issuer}/jwks", timeout=5).json()["keys"][0]
    openid_provider.account("nokid", email="nokid@uni.example", email_verified=True,
                            groups=["fmportal:sakura-lab:member"])  # fmt: skip

    response = sign_in_from(client, openid_provider, "/oidc/authenticate/", "nokid")

    assert (response.status_code, response["Location"]) == (302, "/")
    assert Membership.objects.get(user__username="nokid").organization == sakura


def test_a_token_no_published_key_verifies_is_a_400_and_changes_nothing(client, openid_provider, sakura, settings):
    openid_provider.account("eve", email="eve@uni.example", email_verified=True, groups=["fmportal:sakura-lab:admin"])
    settings.OIDC_RP_SIGN_ALGO = "ES256"  # the provider signs RS256: no key of the provider's is an ES256 one

    response = sign_in_from(client, openid_provider, "/oidc/authenticate/", "eve")

    assert response.status_code == 400 and "could not be verified" in response.content.decode()
    assert not User.objects.filter(username="eve").exists()


def test_a_discovery_document_naming_another_issuer_says_misconfigured_not_unavailable(client, openid_provider):
    openid_provider.configure(discoveryIssuer="https://login.elsewhere.example")
    sso_provider.forget()

    response = client.get("/oidc/authenticate/")

    page = response.content.decode()
    assert response.status_code == 502
    assert "is misconfigured" in page and "https://login.elsewhere.example" in page and "not answering" not in page


def test_usernames_are_unique_without_regard_to_case(client, settings, sakura, django_capture_on_commit_callbacks):
    StaffRoleFactory(user__username="manager")
    with pytest.raises(IntegrityError), transaction.atomic():
        User.objects.create(username="MANAGER")

    link = invite(sakura, "newbie@uni.example", "member", django_capture_on_commit_callbacks)
    form = {"username": "Manager", "password1": "a-long-Passphrase-42", "password2": "a-long-Passphrase-42"}
    response = client.post(link, form)
    assert response.status_code == 400 and "This username is taken." in response.content.decode()
    assert not User.objects.filter(email="newbie@uni.example").exists()


# --- 6: several providers, each with its own button and rules ------------------------------------------------------


@pytest.fixture(scope="module")
def second_provider_process():
    with running_provider(REDIRECT_URI) as provider:
        yield provider


def test_several_providers_each_with_its_button_claims_and_group_rules(
    client, openid_provider, second_provider_process, settings, sakura, kitsune
):
    company = second_provider_process
    company.configure()
    settings.SSO_PROVIDERS = [
        {
            "key": "kitsune-corp",
            "name": "Kitsune Corp",
            "protocol": "oidc",
            "issuer": company.issuer,
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
            "scopes": "openid email profile groups",
            "group_prefix": "corp",
            "group_map": {"gpu-users": "kitsune-ai:member"},
            "trust_email": True,
        }
    ]
    page = client.get("/login/").content.decode()
    assert "Sign in with Test University" in page and "Sign in with Kitsune Corp" in page

    company.account("u123", email="taro@kitsune.example", groups=["gpu-users", "fmportal:sakura-lab:admin"])
    response = sign_in_from(client, company, button(page, "Kitsune Corp"), "u123")

    assert response.status_code == 302
    identity = OidcIdentity.objects.get(subject="u123")
    assert (identity.issuer, identity.email_verified) == (company.issuer, True)
    # This provider's rules: its map places; the other provider's prefix means nothing here.
    assert dict(Membership.objects.filter(user=identity.user).values_list("organization__slug", "role")) == {
        "kitsune-ai": "member"
    }
    # An answer from one provider to a sign-in started at the other is refused.
    client.logout()
    started = client.get(button(page, "Test University"))
    openid_provider.account("u123", email="x@uni.example", email_verified=True, groups=["fmportal:sakura-lab:admin"])
    back = openid_provider.answer(started["Location"], "u123", REDIRECT_URI)
    forged = back.replace(f"iss={requests.utils.quote(openid_provider.issuer, safe='')}",
                          f"iss={requests.utils.quote(company.issuer, safe='')}")  # fmt: skip
    assert client.get(forged.removeprefix("http://testserver")).status_code == 400


def test_a_broken_provider_entry_fails_the_system_check(settings):
    from django.core.management import call_command
    from django.core.management.base import SystemCheckError

    settings.SSO_PROVIDERS = [{"key": "Bad Key!", "protocol": "oidc"}, {"key": "x", "protocol": "ldap"}]
    with pytest.raises(SystemCheckError, match="tenants.sso.E002"):
        call_command("check")


# --- 8: leavers lose access ----------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_back_channel_logout_from_the_provider_ends_the_portal_session_at_once(live_server, settings):
    OrganizationFactory(slug="sakura-lab")
    callback = f"{live_server.url}/oidc/callback/"
    with running_provider(
        callback, backchannel_logout_uri=f"{live_server.url.replace('localhost', '127.0.0.1')}/oidc/backchannel-logout/"
    ) as idp:
        settings.OIDC_ISSUER_URL, settings.OIDC_PROVIDER_NAME = idp.issuer, "Test University"
        settings.OIDC_RP_CLIENT_ID, settings.OIDC_RP_CLIENT_SECRET = CLIENT_ID, CLIENT_SECRET
        sso_provider.forget()
        idp.account("leaver", email="leaver@uni.example", email_verified=True, groups=["fmportal:sakura-lab:member"])
        browser = requests.Session()

        def signed_in() -> bool:
            page = browser.get(f"{live_server.url}/orgs/sakura-lab/", allow_redirects=False, timeout=10)
            return page.status_code == 200

        def sign_in() -> SignInSession:
            start = browser.get(f"{live_server.url}/oidc/authenticate/", allow_redirects=False, timeout=10)
            back = idp.answer(start.headers["Location"], "leaver", callback, browser=requests.Session())
            assert browser.get(back, allow_redirects=False, timeout=10).status_code == 302
            assert signed_in()
            return SignInSession.objects.get(user__username="leaver", provider="oidc")

        row = sign_in()
        assert row.sid  # the ID token's session id, kept for this
        assert idp.backchannel_logout("leaver", sid=row.sid) == "ok"
        assert not signed_in() and not SignInSession.objects.exists()

        sign_in()
        assert idp.backchannel_logout("leaver") == "ok"  # the person, every session of theirs
        assert not signed_in()

        # The same token sent again (captured, replayed later) ends nothing: each is used once.
        sign_in()
        replayed = requests.post(f"{live_server.url}/oidc/backchannel-logout/",
                                 data={"logout_token": idp.last_logout_token}, timeout=10)  # fmt: skip
        assert replayed.status_code == 400 and "used already" in replayed.json()["error_description"]
        assert signed_in()

        # A logout token the provider did not sign is refused and ends nothing.
        sign_in()
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        forged = jwt.encode({"iss": idp.issuer, "aud": CLIENT_ID, "iat": 1, "jti": "x", "sub": "leaver",
                             "events": {"http://schemas.openid.net/event/backchannel-logout": {}}},
                            key, algorithm="RS256")  # fmt: skip
        answer = requests.post(f"{live_server.url}/oidc/backchannel-logout/", data={"logout_token": forged}, timeout=10)
        assert answer.status_code == 400 and answer.json()["error"] == "invalid_request"
        assert signed_in()
        sso_provider.forget()


def test_a_page_view_after_the_recheck_interval_asks_the_provider_again(client, openid_provider, sakura, settings):
    settings.SSO_RECHECK_MINUTES = 30
    openid_provider.account("mio", email="mio@uni.example", email_verified=True, groups=["fmportal:sakura-lab:member"])
    at_provider = requests.Session()  # the person's browser at the provider: signed in there
    begun = client.get("/oidc/authenticate/")
    client.get(
        openid_provider.answer(begun["Location"], "mio", REDIRECT_URI, browser=at_provider).removeprefix(
            "http://testserver"
        )
    )
    assert client.get("/orgs/sakura-lab/").status_code == 200

    session = client.session
    session["sso_checked_at"] = 0  # the last answer is older than the interval
    session.save()
    due = client.get("/orgs/sakura-lab/?tab=x")
    assert due.status_code == 302 and "recheck=1" in due["Location"]
    to_provider = client.get(due["Location"])
    assert "prompt=none" in to_provider["Location"]
    # Still signed in at the provider: straight back to the page, still signed in.
    back = openid_provider.answer(to_provider["Location"], "mio", REDIRECT_URI, browser=at_provider)
    returned = client.get(back.removeprefix("http://testserver"))
    assert (returned.status_code, returned["Location"]) == (302, "/orgs/sakura-lab/?tab=x")
    assert client.get("/orgs/sakura-lab/").status_code == 200

    # Signed out there (or disabled): the provider says login_required, and the portal signs them out too.
    session = client.session
    session["sso_checked_at"] = 0
    session.save()
    to_provider = client.get(client.get("/orgs/sakura-lab/")["Location"])
    answer = requests.Session().get(to_provider["Location"], allow_redirects=False, timeout=10)  # no session there
    location = urljoin(to_provider["Location"], answer.headers["Location"])
    while not location.startswith(REDIRECT_URI):
        answer = requests.get(location, allow_redirects=False, timeout=10)
        location = urljoin(location, answer.headers["Location"])
    assert "error=login_required" in location
    ended = client.get(location.removeprefix("http://testserver"))
    assert ended.status_code == 401 and "You were signed out" in ended.content.decode()
    assert client.get("/orgs/sakura-lab/").status_code == 302


def test_program_staff_end_a_session_from_admin(client, openid_provider, sakura, admin_client):
    openid_provider.account(
        "sato", email="sato@uni.example", email_verified=True, groups=["fmportal:sakura-lab:member"]
    )
    sign_in_from(client, openid_provider, "/oidc/authenticate/", "sato")
    row = SignInSession.objects.get(user__username="sato")
    assert row.provider == "oidc" and client.get("/orgs/sakura-lab/").status_code == 200

    changelist = reverse("admin:tenants_signinsession_changelist")
    done = admin_client.post(changelist, {"action": "end_sessions", "_selected_action": [row.pk]}, follow=True)

    assert "1 session ended." in done.content.decode()
    assert client.get("/orgs/sakura-lab/").status_code == 302 and not SignInSession.objects.filter(pk=row.pk).exists()


def test_no_kind_of_request_goes_on_unchecked_once_the_recheck_is_due(client, openid_provider, sakura, settings):
    settings.SSO_RECHECK_MINUTES = 30
    openid_provider.account("kai", email="kai@uni.example", email_verified=True, groups=["fmportal:sakura-lab:member"])
    sign_in_from(client, openid_provider, "/oidc/authenticate/", "kai")
    session = client.session
    session["sso_checked_at"] = 0
    session.save()

    htmx = client.get(
        "/orgs/sakura-lab/", headers={"HX-Request": "true", "HX-Current-URL": "http://testserver/orgs/sakura-lab/?x=1"}
    )
    assert htmx.status_code == 204 and "recheck=1" in htmx["HX-Redirect"]
    assert "next=%2Forgs%2Fsakura-lab%2F%3Fx%3D1" in htmx["HX-Redirect"]
    posted = client.post("/orgs/sakura-lab/members/invite/", {"email": "x@uni.example", "role": "member"},
                         headers={"Referer": "https://elsewhere.example/phish"})  # fmt: skip
    assert posted.status_code == 303 and "recheck=1" in posted["Location"] and "next=%2F&" in posted["Location"]
    api = client.get("/api/v1/organizations/")
    assert api.status_code == 401 and "checked again" in api.json()["detail"]
    assert Invitation.objects.count() == 0
