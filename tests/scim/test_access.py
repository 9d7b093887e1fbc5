"""Who may use SCIM (a SCIM token, nothing else), when it answers at all, and that every refusal is a SCIM error."""

from datetime import timedelta
from io import StringIO

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from tenants.models import AuditEvent
from tenants.scim import tokens
from tenants.scim.models import ScimToken
from tests.scim.conftest import USER, ScimClient, assert_scim_error

pytestmark = pytest.mark.django_db


def test_scim_is_a_404_until_a_token_is_made(client):
    assert_scim_error(client.get("/scim/v2/Users"), 404)
    tokens.issue_token(name="x")
    assert_scim_error(client.get("/scim/v2/Users"), 401)


def test_without_a_token_it_is_a_401_asking_for_a_bearer_token(scim_token, client):
    response = client.get("/scim/v2/ServiceProviderConfig")
    assert_scim_error(response, 401, None)
    assert response["WWW-Authenticate"] == 'Bearer realm="SCIM"'
    assert_scim_error(ScimClient("scim_not-a-real-key").get("/Users"), 401)
    assert_scim_error(ScimClient("fmp_an-api-token").get("/Users"), 401)


def test_a_signed_in_person_is_not_a_scim_client(scim_token, member_client, manager):
    assert_scim_error(member_client.get("/scim/v2/Users"), 401)
    member_client.force_login(manager)
    response = member_client.post(
        "/scim/v2/Users", {"schemas": [USER], "userName": "x"}, content_type="application/json"
    )
    assert_scim_error(response, 401)  # and no CSRF failure: SCIM takes no session


def test_a_revoked_or_expired_token_is_refused(scim, scim_token):
    assert scim.get("/Users").status_code == 200
    token = scim_token[0]
    token.refresh_from_db()
    assert token.last_used_at is not None
    tokens.revoke_token(token=token)
    assert "revoked" in assert_scim_error(scim.get("/Users"), 401)["detail"]
    _token, key = tokens.issue_token(name="old")
    ScimToken.objects.filter(pk=_token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert "expired" in assert_scim_error(ScimClient(key).get("/Users"), 401)["detail"]
    assert AuditEvent.objects.filter(action="scim.token_revoked", organization=None).exists()


def test_malformed_requests_are_scim_errors_never_a_500(scim):
    assert_scim_error(scim.post("/Users", "{not json"), 400, "invalidSyntax")
    assert_scim_error(scim.post("/Users", "[1, 2]"), 400, "invalidSyntax")
    assert_scim_error(scim.post("/Users", {"schemas": [USER], "active": True}), 400, "invalidValue")  # no userName
    assert_scim_error(
        scim.post("/Users", {"schemas": [USER], "userName": "a b/c", "active": True}), 400, "invalidValue"
    )
    assert_scim_error(scim.get('/Users?filter=userName eq "x'), 400, "invalidFilter")
    assert_scim_error(scim.get("/Users/not-an-id"), 404, None)
    assert_scim_error(scim.get("/Users/2f0c7a0e-0000-4000-8000-000000000000"), 404)
    assert_scim_error(scim.get("/Nothing/here"), 404)
    assert_scim_error(scim.patch("/Users/x", {"op": "jump"}), 404)
    created = scim.create_user("ok")
    assert_scim_error(scim.patch(f"/Users/{created['id']}", {"op": "jump", "path": "active"}), 400)
    assert_scim_error(scim.patch(f"/Users/{created['id']}", {"op": "remove", "path": "active"}), 400)
    assert_scim_error(scim.request("DELETE", "/Users"), 405, None)
    assert_scim_error(scim.request("POST", "/ServiceProviderConfig", {}), 405)
    assert_scim_error(scim.post("/.search", {"schemas": ["urn:ietf:params:scim:api:messages:2.0:SearchRequest"]}), 501)


def test_search_by_post(scim):
    scim.create_user("hana")
    body = {"schemas": ["urn:ietf:params:scim:api:messages:2.0:SearchRequest"], "filter": 'userName eq "hana"',
            "attributes": ["userName"]}  # fmt: skip
    found = scim.post("/Users/.search", body).json()
    assert found["totalResults"] == 1 and set(found["Resources"][0]) == {"schemas", "id", "userName"}


def test_bodies_follow_the_apis_size_and_depth_rule(scim):
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    body = assert_scim_error(scim.request("POST", "/Users", "{}", CONTENT_LENGTH=str(limit + 1)), 413)
    assert body["detail"] == "The request body is 2.5 MB; the limit is 2.5 MB: nothing of it was read."
    assert_scim_error(scim.post("/Users", "[" * 100 + "]" * 100), 400, "invalidSyntax")
    anonymous = Client().generic("PATCH", "/scim/v2/Users/x", "{" * 50, content_type="application/scim+json",
                                 CONTENT_LENGTH=str(limit + 1))  # fmt: skip
    assert_scim_error(anonymous, 413)  # before anyone is authenticated


def test_writes_count_against_the_apis_budget(scim, settings):
    settings.API_WRITES_PER_MINUTE = 2
    scim.create_user("one")
    scim.create_user("two")
    response = scim.post("/Users", {"schemas": [USER], "userName": "three", "active": True})
    assert_scim_error(response, 429)
    assert int(response["Retry-After"]) >= 1
    assert scim.get("/Users").status_code == 200  # reads are not counted


def test_the_command_creates_lists_and_revokes_tokens(manager):
    out = StringIO()
    call_command(
        "scim_token", "create", "--name", "Okta (Hokuto)", "--days", "30", "--by", manager.username, stdout=out
    )
    key = out.getvalue().strip().splitlines()[-1]
    token = ScimToken.objects.get()
    assert key.startswith(token.prefix) and token.created_by == manager
    assert ScimClient(key).get("/ServiceProviderConfig").status_code == 200
    out = StringIO()
    call_command("scim_token", "list", stdout=out)
    assert token.prefix in out.getvalue() and "active" in out.getvalue()
    call_command("scim_token", "revoke", token.prefix, stdout=StringIO())
    assert_scim_error(ScimClient(key).get("/ServiceProviderConfig"), 401)
    assert AuditEvent.objects.filter(action="scim.token_created", actor=manager).exists()
