"""API tokens: named, many per user, hashed at rest, shown once, with an expiry; listed and revoked by their
owner on /account/tokens/ and at /api/v1/auth/tokens/."""

import hashlib
import logging
from datetime import timedelta

import pytest
import time_machine
from django.db import connection
from django.utils import timezone

from tenants.tokens import services
from tenants.tokens.keys import new_key
from tenants.tokens.models import ApiToken
from tests.factories import PASSWORD, MembershipFactory

pytestmark = pytest.mark.django_db


def issue(api_client, user, **extra):
    response = api_client.post("/api/v1/auth/token/", {"username": user.username, "password": PASSWORD, **extra})
    assert response.status_code == 201, response.content
    return response.json()


def authorized(api_client, key):
    api_client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return api_client


@pytest.fixture
def user():
    return MembershipFactory().user


@pytest.fixture
def other_user():
    return MembershipFactory().user


# --- storage -------------------------------------------------------------------------------------------


def test_the_key_is_stored_only_as_a_digest_and_a_prefix(api_client, user):
    body = issue(api_client, user)
    key = body["token"]
    token = ApiToken.objects.get(user=user)
    assert token.digest == hashlib.sha256(key.encode()).hexdigest()
    assert key.startswith(token.prefix) and len(token.prefix) < 16 < len(key)
    assert body["prefix"] == token.prefix
    with connection.cursor() as cursor:  # nowhere in the row, in any column
        cursor.execute("SELECT * FROM tenants_apitoken")
        assert not any(key in str(value) for row in cursor.fetchall() for value in row)


def test_every_login_gives_a_new_token_and_all_of_them_work(api_client, user, org):
    first, second = issue(api_client, user)["token"], issue(api_client, user)["token"]
    assert first != second
    for key in (first, second):
        assert authorized(api_client, key).get("/api/v1/organizations/").status_code == 200


def test_a_token_is_named_and_expires_after_ninety_days_by_default(api_client, user):
    now = timezone.now()
    with time_machine.travel(now, tick=False):
        body = issue(api_client, user)
    token = ApiToken.objects.get(pk=body["id"])
    assert token.name.startswith("script ")
    assert token.expires_at == now + timedelta(days=90)
    named = issue(api_client, user, name="nightly sacct upload", expires_in_days=7)
    assert named["name"] == "nightly sacct upload"
    assert ApiToken.objects.get(pk=named["id"]).expires_at - ApiToken.objects.get(pk=named["id"]).created_at == (
        timedelta(days=7)
    )


@pytest.mark.parametrize("days", [0, 366, "soon"])
def test_an_expiry_out_of_range_is_a_400_naming_the_field(api_client, user, days):
    response = api_client.post(
        "/api/v1/auth/token/", {"username": user.username, "password": PASSWORD, "expires_in_days": days}
    )
    assert response.status_code == 400
    assert "expires_in_days" in response.json()
    assert not ApiToken.objects.exists()


def test_a_username_longer_than_any_is_a_400_not_a_failed_login(api_client):
    response = api_client.post("/api/v1/auth/token/", {"username": "u" * 300, "password": "x"})
    assert response.status_code == 400
    assert "username" in response.json()


def test_a_name_too_long_is_a_400(api_client, user):
    response = api_client.post(
        "/api/v1/auth/token/", {"username": user.username, "password": PASSWORD, "name": "x" * 101}
    )
    assert response.status_code == 400
    assert "name" in response.json()


def test_a_user_has_at_most_a_hundred_active_tokens(api_client, user, monkeypatch):
    monkeypatch.setattr(services, "MAX_ACTIVE_TOKENS", 2)
    issue(api_client, user)
    issue(api_client, user)
    response = api_client.post("/api/v1/auth/token/", {"username": user.username, "password": PASSWORD})
    assert response.status_code == 400
    assert "revoke some" in response.json()["non_field_errors"][0]


def test_the_keys_are_of_their_kind_and_random():
    a, b = new_key("fmp"), new_key("fmp")
    assert a.key.startswith("fmp_") and a.key != b.key and a.digest != b.digest
    assert ApiToken.find("not-a-token") is None


# --- using a token ---------------------------------------------------------------------------------------


def test_an_expired_token_is_refused_with_a_message(api_client, user, org):
    key = issue(api_client, user, expires_in_days=1)["token"]
    with time_machine.travel(timezone.now() + timedelta(days=1, seconds=1)):
        response = authorized(api_client, key).get("/api/v1/organizations/")
    assert response.status_code == 401
    assert response.json() == {"detail": "This token has expired: create a new one."}
    assert response["WWW-Authenticate"] == "Token"


def test_a_revoked_token_stops_working_at_once(api_client, user, org):
    body = issue(api_client, user)
    client = authorized(api_client, body["token"])
    assert client.delete(f"/api/v1/auth/tokens/{body['id']}/").status_code == 204
    response = client.get("/api/v1/organizations/")
    assert response.status_code == 401
    assert response.json() == {"detail": "This token was revoked."}


def test_a_wrong_key_with_a_right_prefix_is_refused(api_client, user):
    key = issue(api_client, user)["token"]
    tampered = key[:-4] + ("AAAA" if not key.endswith("AAAA") else "BBBB")
    response = authorized(api_client, tampered).get("/api/v1/organizations/")
    assert response.status_code == 401
    assert response.json() == {"detail": "Invalid token."}


def test_an_inactive_users_token_is_refused(api_client, user):
    key = issue(api_client, user)["token"]
    user.is_active = False
    user.save()
    assert authorized(api_client, key).get("/api/v1/organizations/").status_code == 401


def test_last_use_is_recorded_at_most_once_a_minute(api_client, user, org, django_assert_num_queries):
    body = issue(api_client, user)
    client = authorized(api_client, body["token"])
    start = timezone.now()
    with time_machine.travel(start, tick=False):
        client.get("/api/v1/organizations/")
    assert ApiToken.objects.get(pk=body["id"]).last_used_at == start
    with time_machine.travel(start + timedelta(seconds=30), tick=False):
        client.get("/api/v1/organizations/")
    assert ApiToken.objects.get(pk=body["id"]).last_used_at == start
    with time_machine.travel(start + timedelta(minutes=2), tick=False):
        client.get("/api/v1/organizations/")
    assert ApiToken.objects.get(pk=body["id"]).last_used_at == start + timedelta(minutes=2)


# --- listing and revoking through the API -------------------------------------------------------------


def test_the_api_lists_only_your_own_tokens_and_never_a_key(api_client, user, other_user):
    mine = issue(api_client, user, name="mine")
    issue(api_client, other_user, name="theirs")
    listing = authorized(api_client, mine["token"]).get("/api/v1/auth/tokens/").json()
    assert [t["name"] for t in listing["results"]] == ["mine"]
    assert "token" not in listing["results"][0] and "digest" not in listing["results"][0]
    assert listing["results"][0]["state"] == "active"


def test_another_users_token_is_404_and_stays_active(api_client, user, other_user):
    mine = issue(api_client, user)
    theirs = issue(api_client, other_user)
    client = authorized(api_client, mine["token"])
    assert client.get(f"/api/v1/auth/tokens/{theirs['id']}/").status_code == 404
    assert client.delete(f"/api/v1/auth/tokens/{theirs['id']}/").status_code == 404
    assert ApiToken.objects.get(pk=theirs["id"]).revoked_at is None


def test_token_endpoints_need_authentication(api_client):
    response = api_client.get("/api/v1/auth/tokens/")
    assert response.status_code == 401
    assert response["Content-Type"] == "application/json"


def test_the_schema_documents_the_token_endpoints(client):
    schema = client.get("/api/schema/?format=json").json()
    create = schema["paths"]["/api/v1/auth/token/"]["post"]
    assert {"201", "400", "429"} <= set(create["responses"])
    body = create["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    assert {"username", "password", "name", "expires_in_days"} <= set(
        schema["components"]["schemas"][body]["properties"]
    )
    assert "/api/v1/auth/tokens/{id}/" in schema["paths"]


# --- the page ----------------------------------------------------------------------------------------------


def test_the_page_creates_a_token_and_shows_its_key_once(client, user):
    client.force_login(user)
    response = client.post("/account/tokens/", {"name": "laptop", "expires_in_days": "30"})
    assert response.status_code == 200
    token = ApiToken.objects.get(user=user)
    key = response.context["new"]["key"]
    assert key in response.text and "it will not be shown again" in response.text
    assert token.digest == hashlib.sha256(key.encode()).hexdigest()
    assert token.created_via == "page" and token.name == "laptop"
    assert "no-store" in response["Cache-Control"] or "max-age=0" in response["Cache-Control"]
    again = client.get("/account/tokens/")
    assert key not in again.text
    assert token.prefix in again.text and "laptop" in again.text


def test_the_page_refuses_an_expiry_it_does_not_offer(client, user):
    client.force_login(user)
    response = client.post("/account/tokens/", {"name": "x", "expires_in_days": "3650"})
    assert response.status_code == 400
    assert not ApiToken.objects.exists()
    assert "Select a valid choice" in response.text


def test_the_page_revokes_a_token_and_keeps_it_listed(client, user):
    client.force_login(user)
    token, _ = services.create_token(user=user, name="old", expires_in_days=7, via="page")
    response = client.post(f"/account/tokens/{token.pk}/revoke/", follow=True)
    assert response.status_code == 200
    token.refresh_from_db()
    assert token.revoked_at is not None and token.revoked_by == user
    assert "revoked" in response.text


def test_another_users_token_cannot_be_revoked_on_the_page(client, user, other_user):
    theirs, _ = services.create_token(user=other_user, name="theirs", expires_in_days=7, via="api")
    client.force_login(user)
    assert client.post(f"/account/tokens/{theirs.pk}/revoke/").status_code == 404
    theirs.refresh_from_db()
    assert theirs.revoked_at is None
    assert "theirs" not in client.get("/account/tokens/").text


def test_the_page_needs_a_login(client):
    assert client.get("/account/tokens/").status_code == 302
    assert client.post("/account/tokens/1/revoke/").status_code == 302


def test_revoke_only_by_post(client, user):
    client.force_login(user)
    token, _ = services.create_token(user=user, name="t", expires_in_days=7, via="page")
    assert client.get(f"/account/tokens/{token.pk}/revoke/").status_code == 405


def test_the_top_bar_links_to_the_page(client, user):
    client.force_login(user)
    assert 'href="/account/tokens/"' in client.get("/account/tokens/").text


def test_the_page_in_japanese(client, user):
    client.force_login(user)
    client.cookies["django_language"] = "ja"
    assert "API トークン" in client.get("/account/tokens/").text


# --- the record --------------------------------------------------------------------------------------------


def test_creation_and_revocation_are_recorded_and_logged(api_client, user, caplog):
    with caplog.at_level(logging.INFO, logger="portal.tokens"):
        body = api_client.post(
            "/api/v1/auth/token/",
            {"username": user.username, "password": PASSWORD, "name": "ci"},
            REMOTE_ADDR="192.0.2.10",
        ).json()
        authorized(api_client, body["token"]).delete(f"/api/v1/auth/tokens/{body['id']}/")
    token = ApiToken.objects.get(pk=body["id"])
    assert (token.created_via, token.created_from, token.revoked_by) == ("api", "192.0.2.10", user)
    lines = [r.getMessage() for r in caplog.records if r.name == "portal.tokens"]
    assert lines[0].startswith(f"API token created: id={token.pk} prefix={token.prefix} user={user.username}")
    assert lines[1].startswith(f"API token revoked: id={token.pk}")
    assert all(body["token"] not in line for line in lines)


def test_revoking_twice_keeps_the_first_record(user, other_user):
    token, _ = services.create_token(user=user, name="t", expires_in_days=7, via="page")
    services.revoke_token(token=token, by=user)
    first = token.revoked_at
    services.revoke_token(token=token, by=other_user)
    token.refresh_from_db()
    assert (token.revoked_at, token.revoked_by) == (first, user)


def test_the_expiry_choices_speak_the_readers_language(client, user):
    """Built when the form is shown, not frozen in English when the module was imported."""
    client.force_login(user)
    japanese = client.get("/account/tokens/", HTTP_ACCEPT_LANGUAGE="ja").text
    assert '<option value="7">7 日</option>' in japanese and "7 days" not in japanese
    english = client.get("/account/tokens/", HTTP_ACCEPT_LANGUAGE="en").text
    assert '<option value="365">365 days</option>' in english
