"""LOCAL_PASSWORD_LOGIN=False: only break-glass accounts (superusers) sign in with a password."""

import pytest

from tests.factories import PASSWORD, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def passwords_off(settings):
    settings.OIDC_ISSUER_URL = "https://idp.example.ac.jp/realms/fm"
    settings.OIDC_PROVIDER_NAME = "Example University"
    settings.LOCAL_PASSWORD_LOGIN = False


def test_the_login_page_offers_the_provider_and_hides_the_password_form(client, passwords_off):
    page = client.get("/login/").content.decode()
    assert "Sign in with Example University" in page
    assert 'name="password"' not in page and "?break-glass=1" in page
    assert 'name="password"' in client.get("/login/?break-glass=1").content.decode()


def test_a_tenant_cannot_sign_in_with_a_password(client, passwords_off):
    member = MembershipFactory().user
    response = client.post("/login/", {"username": member.username, "password": PASSWORD})
    assert response.status_code == 200
    assert "only for break-glass administrator accounts" in response.content.decode()
    assert "_auth_user_id" not in client.session
    response = client.post("/api/v1/auth/token/", {"username": member.username, "password": PASSWORD})
    assert response.status_code == 400 and "break-glass" in response.json()["non_field_errors"][0]


def test_a_break_glass_superuser_still_can(client, passwords_off):
    admin = UserFactory(is_superuser=True, is_staff=True)
    response = client.post("/login/?break-glass=1", {"username": admin.username, "password": PASSWORD})
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(admin.pk)
    response = client.post("/api/v1/auth/token/", {"username": admin.username, "password": PASSWORD})
    assert response.status_code == 201


def test_switching_passwords_off_ends_password_sessions(client, settings):
    member = MembershipFactory().user
    assert client.post("/login/", {"username": member.username, "password": PASSWORD}).status_code == 302
    assert client.get("/").status_code == 302 and client.get("/").url != "/login/?next=/"
    settings.OIDC_ISSUER_URL = "https://idp.example.ac.jp/realms/fm"
    settings.LOCAL_PASSWORD_LOGIN = False
    assert client.get("/").url == "/login/?next=/"
