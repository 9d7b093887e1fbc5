"""Sign-in with a real OpenID provider (tests/sso/provider.js): the portal's backend and views, driven with the
provider's own answers. The browser walks the same flow in tests/browser/test_sso.py."""

from urllib.parse import parse_qs, urljoin, urlsplit

import pytest
import requests
from django.contrib.admin.models import LogEntry
from django.contrib.auth import get_user_model

from tenants.models import AuditEvent, Membership, StaffRole
from tenants.sso import provider as sso_provider
from tenants.sso.models import GrantSource, OidcIdentity
from tenants.tokens.services import create_token
from tests.factories import MembershipFactory, OrganizationFactory, StaffRoleFactory, UserFactory
from tests.sso.conftest import REDIRECT_URI
from tests.sso.openid_provider import running_provider

pytestmark = pytest.mark.django_db
User = get_user_model()


def sign_in(client, provider, subject: str):
    start = client.get("/oidc/authenticate/")
    assert start.status_code == 302, start
    back = provider.answer(start["Location"], subject, REDIRECT_URI)
    return client.get(back.removeprefix("http://testserver"))


@pytest.fixture
def sakura(db):
    return OrganizationFactory(slug="sakura-lab", name="Sakura Language Lab")


@pytest.fixture
def kitsune(db):
    return OrganizationFactory(slug="kitsune-ai", name="Kitsune AI")


def test_first_sign_in_creates_the_user_and_places_them_by_their_groups(client, openid_provider, sakura):
    openid_provider.account(
        "alice-0001",
        email="alice@uni.example",
        email_verified=True,
        preferred_username="alice",
        given_name="Alice",
        family_name="Tanaka",
        groups=["staff-all", "fmportal:sakura-lab:admin", "fmportal:sakura-lab:member"],
    )
    response = sign_in(client, openid_provider, "alice-0001")

    assert response.status_code == 302 and response["Location"] == "/"
    identity = OidcIdentity.objects.select_related("user").get()
    assert (identity.issuer, identity.subject, identity.email) == (
        openid_provider.issuer,
        "alice-0001",
        "alice@uni.example",
    )
    user = identity.user
    assert (user.username, user.email, user.first_name, user.last_name) == (
        "alice",
        "alice@uni.example",
        "Alice",
        "Tanaka",
    )
    assert not user.has_usable_password()
    membership = Membership.objects.get(user=user)
    assert (membership.organization, membership.role, membership.source) == (sakura, "admin", GrantSource.SSO)
    event = AuditEvent.objects.get(organization=sakura)
    assert (event.actor, event.action, event.changes) == (user, "sso.membership_granted", {"role": [None, "admin"]})
    assert "fmportal:sakura-lab:admin" in event.comment
    assert client.get("/").url == "/orgs/sakura-lab/"  # signed in, and home leads to the org


def test_the_next_sign_in_follows_changed_groups_and_keeps_grants_made_in_the_portal(
    client, openid_provider, sakura, kitsune
):
    third = OrganizationFactory(slug="third-org")
    openid_provider.account(
        "bob",
        email="bob@uni.example",
        email_verified=True,
        groups=["fmportal:sakura-lab:member", "/fmportal/third-org/admin"],
    )
    sign_in(client, openid_provider, "bob")
    user = OidcIdentity.objects.get(subject="bob").user
    local = MembershipFactory(user=user, organization=kitsune, role="admin")  # an invitation, an admin's grant

    openid_provider.account("bob", email="bob@uni.example", email_verified=True, groups=["fmportal:sakura-lab:admin"])
    client.logout()
    assert sign_in(client, openid_provider, "bob").status_code == 302

    roles = {m.organization.slug: (m.role, m.source) for m in Membership.objects.filter(user=user)}
    assert roles == {"sakura-lab": ("admin", "sso"), "kitsune-ai": ("admin", "local")}
    assert local.pk == Membership.objects.get(user=user, organization=kitsune).pk
    changed = AuditEvent.objects.get(organization=sakura, action="sso.role_changed")
    assert changed.changes == {"role": ["member", "admin"]}
    removed = AuditEvent.objects.get(organization=third, action="sso.membership_removed")
    assert removed.changes == {"role": ["admin", None]} and removed.actor == user
    assert not AuditEvent.objects.filter(organization=kitsune).exists()


def test_an_email_change_or_a_reused_address_never_takes_over_an_account(client, openid_provider, sakura):
    owner = UserFactory(username="carol", email="carol@uni.example")
    MembershipFactory(user=owner, organization=sakura, role="admin")
    # Someone else at the provider now has Carol's old address: a new account, not Carol's.
    openid_provider.account(
        "newcomer",
        email="carol@uni.example",
        email_verified=True,
        preferred_username="carol",
        groups=["fmportal:sakura-lab:member"],
    )
    # No second account with Carol's address (it would block Carol's invitations): the page says whom to ask.
    refused = sign_in(client, openid_provider, "newcomer")
    assert refused.status_code == 409
    assert "already has an account for carol@uni.example" in refused.content.decode()
    assert not OidcIdentity.objects.exists() and User.objects.count() == 1
    assert Membership.objects.get(user=owner).role == "admin"

    # With another address, a new account; the same subject with a new address later is still that person.
    openid_provider.account(
        "newcomer",
        email="newcomer@uni.example",
        email_verified=True,
        preferred_username="carol",
        groups=["fmportal:sakura-lab:member"],
    )
    sign_in(client, openid_provider, "newcomer")
    newcomer = OidcIdentity.objects.get(subject="newcomer").user
    assert newcomer != owner and newcomer.username == "carol-2"
    openid_provider.account(
        "newcomer", email="renamed@uni.example", email_verified=True, groups=["fmportal:sakura-lab:member"]
    )
    client.logout()
    sign_in(client, openid_provider, "newcomer")
    assert OidcIdentity.objects.get(subject="newcomer").user == newcomer
    assert User.objects.get(pk=newcomer.pk).email == "renamed@uni.example"
    assert User.objects.count() == 2


def test_staff_groups_give_and_take_the_staff_role_but_never_a_local_one(client, openid_provider, sakura):
    openid_provider.account(
        "pm", email="pm@program.example", email_verified=True, groups=["fmportal:staff:program-manager"]
    )
    assert sign_in(client, openid_provider, "pm")["Location"] == "/"
    user = OidcIdentity.objects.get(subject="pm").user
    assert StaffRole.objects.get(user=user).role == StaffRole.Role.PROGRAM_MANAGER
    assert client.get("/").url == "/program/"

    openid_provider.account(
        "pm",
        email="pm@program.example",
        email_verified=True,
        groups=["fmportal:staff:support_engineer", "fmportal:sakura-lab:member"],
    )
    client.logout()
    sign_in(client, openid_provider, "pm")
    assert StaffRole.objects.get(user=user).role == StaffRole.Role.SUPPORT_ENGINEER

    openid_provider.account(
        "pm", email="pm@program.example", email_verified=True, groups=["fmportal:sakura-lab:member"]
    )
    client.logout()
    sign_in(client, openid_provider, "pm")
    assert not StaffRole.objects.filter(user=user).exists()
    history = list(LogEntry.objects.filter(user=user).order_by("pk").values_list("action_flag", flat=True))
    assert history == [1, 2, 3]  # granted, changed, removed: Django admin's history of staff roles

    local = StaffRoleFactory(user=UserFactory(), role=StaffRole.Role.SUPPORT_ENGINEER)
    OidcIdentity.objects.create(user=local.user, issuer=openid_provider.issuer, subject="local-staff")
    openid_provider.account(
        "local-staff", email="x@program.example", email_verified=True, groups=["fmportal:staff:program_manager"]
    )
    client.logout()
    sign_in(client, openid_provider, "local-staff")
    assert StaffRole.objects.get(user=local.user).role == StaffRole.Role.SUPPORT_ENGINEER


def test_a_person_the_groups_place_nowhere_gets_whom_to_ask_and_no_account(client, openid_provider, sakura):
    openid_provider.account(
        "dave",
        email="dave@uni.example",
        email_verified=True,
        groups=["students", "fmportal:no-such-org:admin", "fmportal:sakura-lab:owner"],
    )
    response = sign_in(client, openid_provider, "dave")

    assert response.status_code == 403
    page = response.content.decode()
    assert "You are not yet in any organization of the program" in page
    assert "fm-program@example.jp" in page and "dave@uni.example" in page
    assert "fmportal:no-such-org:admin" in page and "students" not in page
    assert not User.objects.exists() and not OidcIdentity.objects.exists()
    assert client.get("/").status_code == 302  # not signed in


def test_someone_whose_groups_no_longer_place_them_loses_the_grants_and_gets_the_page(client, openid_provider, sakura):
    openid_provider.account(
        "erin", email="erin@uni.example", email_verified=True, groups=["fmportal:sakura-lab:member"]
    )
    sign_in(client, openid_provider, "erin")
    openid_provider.account("erin", email="erin@uni.example", email_verified=True, groups=[])
    client.logout()

    response = sign_in(client, openid_provider, "erin")
    assert response.status_code == 403
    assert not Membership.objects.exists()
    assert AuditEvent.objects.filter(action="sso.membership_removed").count() == 1
    assert "_auth_user_id" not in client.session


def test_a_deactivated_account_is_refused(client, openid_provider, sakura):
    openid_provider.account(
        "frank", email="frank@uni.example", email_verified=True, groups=["fmportal:sakura-lab:member"]
    )
    sign_in(client, openid_provider, "frank")
    User.objects.filter(username="frank").update(is_active=False)
    assert client.get("/").status_code == 302  # the session ends with the account
    response = sign_in(client, openid_provider, "frank")
    assert response.status_code == 403 and "deactivated" in response.content.decode()


def test_a_tampered_state_or_a_replayed_answer_is_refused_and_creates_nothing(client, openid_provider, sakura):
    openid_provider.account(
        "gina", email="gina@uni.example", email_verified=True, groups=["fmportal:sakura-lab:member"]
    )
    start = client.get("/oidc/authenticate/")
    back = openid_provider.answer(start["Location"], "gina", REDIRECT_URI)
    tampered = back.replace("state=", "state=x")
    response = client.get(tampered.removeprefix("http://testserver"))
    assert response.status_code == 400 and "Sign-in not completed" in response.content.decode()
    assert not User.objects.exists()

    ok = sign_in(client, openid_provider, "gina")
    assert ok.status_code == 302
    client.logout()
    start = client.get("/oidc/authenticate/")
    back = openid_provider.answer(start["Location"], "gina", REDIRECT_URI)
    assert client.get(back.removeprefix("http://testserver")).status_code == 302
    assert client.get(back.removeprefix("http://testserver")).status_code == 400  # the same answer again


def test_an_id_token_for_another_audience_is_refused(client, openid_provider, sakura):
    openid_provider.account(
        "hana", email="hana@uni.example", email_verified=True, groups=["fmportal:sakura-lab:member"]
    )
    openid_provider.configure(idTokenAudience="another-application")
    response = sign_in(client, openid_provider, "hana")
    assert response.status_code == 400
    assert not User.objects.exists() and "_auth_user_id" not in client.session


def test_an_expired_id_token_is_refused(client, openid_provider, sakura, settings):
    settings.OIDC_CLOCK_SKEW_SECONDS = 0
    openid_provider.account(
        "ivan", email="ivan@uni.example", email_verified=True, groups=["fmportal:sakura-lab:member"]
    )
    # The token lives one second and reaches the portal two seconds after it was issued.
    openid_provider.configure(idTokenTtl=1, tokenDelayMs=2100)
    response = sign_in(client, openid_provider, "ivan")
    assert response.status_code == 400
    assert not User.objects.exists()


def test_a_provider_that_is_down_gets_a_clear_page_and_changes_nothing(client, openid_provider, settings, sakura):
    with running_provider(REDIRECT_URI) as provider:  # one of its own, to stop in the middle of a sign-in
        settings.OIDC_ISSUER_URL = provider.issuer
        sso_provider.forget()
        provider.account("jun", email="jun@uni.example", email_verified=True, groups=["fmportal:sakura-lab:member"])
        start = client.get("/oidc/authenticate/")
        back = provider.answer(start["Location"], "jun", REDIRECT_URI)
    # The person comes back with a code; the provider is gone before the portal can trade it for tokens.
    response = client.get(back.removeprefix("http://testserver"))
    assert response.status_code == 503
    assert "Test University is not answering" in response.content.decode()
    sso_provider.forget()
    response = client.get("/oidc/authenticate/")
    assert response.status_code == 503 and "Nothing was changed" in response.content.decode()
    assert not User.objects.exists() and not Membership.objects.exists()


def test_api_tokens_work_for_people_who_sign_in_with_their_institution(client, openid_provider, sakura):
    openid_provider.account("kei", email="kei@uni.example", email_verified=True, groups=["fmportal:sakura-lab:member"])
    sign_in(client, openid_provider, "kei")
    user = OidcIdentity.objects.get(subject="kei").user
    _, key = create_token(user=user, name="script", expires_in_days=7, via="page")
    client.logout()
    response = client.get("/api/v1/organizations/", HTTP_AUTHORIZATION=f"Token {key}")
    assert response.status_code == 200
    assert [o["slug"] for o in response.json()["results"]] == ["sakura-lab"]


def test_without_a_provider_the_login_page_is_the_password_form_alone(client, settings):
    settings.OIDC_ISSUER_URL = ""
    page = client.get("/login/").content.decode()
    assert "Sign in with" not in page and 'name="password"' in page
    assert client.get("/oidc/authenticate/").status_code == 404
    assert client.get("/oidc/callback/?code=x&state=y").status_code == 404


def test_with_a_provider_the_login_page_offers_it_first(client, openid_provider):
    page = client.get("/login/?next=/orgs/x/").content.decode()
    assert "Sign in with Test University" in page
    assert 'href="/oidc/authenticate/?provider=oidc&amp;next=%2Forgs%2Fx%2F"' in page
    assert 'name="password"' in page


def test_the_sign_in_routes_name_no_object_and_show_no_organization(client, openid_provider, sakura, kitsune):
    # tests/test_tenant_gate.py walks routes that name an object; these two name none and must show no tenant data.
    from tests.test_tenant_gate import ROUTES

    assert not {r.name for r in ROUTES} & {"oidc_authentication_init", "oidc_authentication_callback"}
    client.force_login(MembershipFactory(organization=sakura).user)
    for url in ("/oidc/callback/?code=x&state=y", "/oidc/callback/?error=access_denied", "/oidc/callback/"):
        response = client.get(url)
        assert response.status_code == 400
        assert "Kitsune AI" not in response.content.decode()


def test_an_existing_account_linked_in_admin_is_the_one_its_person_signs_in_to(client, openid_provider, sakura):
    tenant = MembershipFactory(organization=sakura, role="admin").user  # a local account from before single sign-on
    admin = UserFactory(is_superuser=True, is_staff=True)
    client.force_login(admin)
    response = client.post(
        "/admin/tenants/oidcidentity/add/",
        {"user": tenant.pk, "issuer": openid_provider.issuer, "subject": "tenant-at-uni"},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    client.logout()

    openid_provider.account(
        "tenant-at-uni", email="t@uni.example", email_verified=True, groups=[]
    )  # no groups: the local grant places
    assert sign_in(client, openid_provider, "tenant-at-uni")["Location"] == "/"
    assert client.session["_auth_user_id"] == str(tenant.pk)
    assert Membership.objects.get(user=tenant).source == GrantSource.LOCAL
    assert OidcIdentity.objects.get(subject="tenant-at-uni").last_login is not None


def test_signing_out_ends_the_session_at_the_provider_too(client, openid_provider, sakura):
    """RP-Initiated Logout: signing out of the portal sends the person to the provider's end-session endpoint with
    their ID token as the hint; once they confirm there, the provider's session is over too, and it sends them
    back to the portal's login page. The next "Sign in with…" asks who they are again (on a shared machine, the
    next person is not signed in as them)."""
    openid_provider.account("jun", email="jun@uni.example", email_verified=True, groups=["fmportal:sakura-lab:member"])
    browser = requests.Session()  # the person's browser at the provider: its cookies are the provider's session
    start = client.get("/oidc/authenticate/")
    back = openid_provider.answer(start["Location"], "jun", REDIRECT_URI, browser=browser)
    assert client.get(back.removeprefix("http://testserver")).status_code == 302
    id_token = client.session["oidc_id_token"]
    # Signed in at the provider: a second sign-in there asks for no login.
    assert not asks_to_log_in(browser, client.get("/oidc/authenticate/")["Location"])

    response = client.post("/logout/")
    assert response.status_code == 302
    ending = urlsplit(response["Location"])
    assert f"{ending.scheme}://{ending.netloc}{ending.path}" == f"{openid_provider.issuer}/session/end"
    assert parse_qs(ending.query) == {
        "id_token_hint": [id_token],
        "client_id": ["fmportal"],
        "post_logout_redirect_uri": ["http://testserver/login/"],
    }
    assert client.get("/").status_code == 302 and "_auth_user_id" not in client.session  # out of the portal
    assert openid_provider.sign_out(response["Location"], browser) == "http://testserver/login/"
    # Out at the provider: signing in again asks for the login.
    assert asks_to_log_in(browser, client.get("/oidc/authenticate/")["Location"])


def asks_to_log_in(browser, url: str) -> bool:
    """Whether the provider, followed from `url` as `browser` up to its first page or back to the portal, shows
    its login form."""
    for _ in range(10):
        response = browser.get(url, allow_redirects=False, timeout=10)
        location = response.headers.get("Location")
        if not location:
            return 'name="login"' in response.text
        url = urljoin(url, location)
        if url.startswith("http://testserver/"):
            return False
    raise AssertionError("the provider kept redirecting")


def test_password_sign_out_and_a_silent_provider_leave_the_person_signed_out_of_the_portal(
    client, openid_provider, sakura, settings
):
    """Someone who signed in with a password has no session at the provider: signing out goes to the login page.
    Someone who signed in with the provider, when it does not answer, is signed out of the portal all the same."""
    client.force_login(UserFactory(username="local"))  # a password session: no ID token in it
    response = client.post("/logout/")
    assert (response.status_code, response["Location"]) == (302, "/login/")

    openid_provider.account("jun", email="jun@uni.example", email_verified=True, groups=["fmportal:sakura-lab:member"])
    sign_in(client, openid_provider, "jun")
    assert "_auth_user_id" in client.session
    settings.OIDC_ISSUER_URL = "http://127.0.0.1:9"  # nothing listens there
    sso_provider.forget()
    response = client.post("/logout/")
    assert (response.status_code, response["Location"]) == (302, "/login/")
    assert "_auth_user_id" not in client.session
