"""SCIM Users: provisioning maps to the portal's accounts, and deactivation takes access away at once."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from rest_framework.test import APIClient

from tenants.models import AuditEvent, Membership
from tenants.scim.models import ScimUser
from tenants.tokens.models import ApiToken
from tenants.tokens.services import create_token
from tests.factories import PASSWORD, MembershipFactory, UserFactory
from tests.scim.conftest import USER, assert_scim_error

pytestmark = pytest.mark.django_db
User = get_user_model()


def test_creating_a_user_makes_an_account_with_its_attributes(scim):
    response = scim.post(
        "/Users",
        {
            "schemas": [USER],
            "userName": "bjensen@sakura.ac.jp",
            "externalId": "entra-42",
            "name": {"givenName": "Barbara", "familyName": "Jensen"},
            "emails": [{"value": "b.jensen@sakura.ac.jp", "type": "work", "primary": True}],
            "active": True,
        },
    )
    assert response.status_code == 201
    assert response["Content-Type"] == "application/scim+json"
    body = response.json()
    assert response["Location"] == body["meta"]["location"] == f"http://testserver/scim/v2/Users/{body['id']}"
    user = User.objects.get(username="bjensen@sakura.ac.jp")
    assert (user.first_name, user.last_name, user.email, user.is_active) == (
        "Barbara", "Jensen", "b.jensen@sakura.ac.jp", True,
    )  # fmt: skip
    assert not user.has_usable_password()  # signs in through the institution
    scim_user = ScimUser.objects.get(user=user)
    assert str(scim_user.scim_id) == body["id"] and scim_user.external_id == "entra-42"
    assert scim.get(f"/Users/{body['id']}").json()["emails"] == [
        {"value": "b.jensen@sakura.ac.jp", "type": "work", "primary": True}
    ]


def test_user_name_is_unique_without_regard_to_case(scim):
    scim.create_user("BJensen")
    assert_scim_error(
        scim.post("/Users", {"schemas": [USER], "userName": "bjensen", "active": True}), 409, "uniqueness"
    )
    other = scim.create_user("other")
    response = scim.patch(f"/Users/{other['id']}", {"op": "replace", "path": "userName", "value": "BJENSEN"})
    assert_scim_error(response, 409, "uniqueness")


def test_an_existing_account_is_taken_over_by_its_user_name_but_never_a_superuser(scim):
    person = UserFactory(username="carol")
    created = scim.create_user("Carol", externalId="x-1")
    assert ScimUser.objects.get(user=person).external_id == "x-1"
    assert created["userName"] == "Carol"
    User.objects.create_superuser("root", "root@example.com", "pw")
    assert_scim_error(scim.post("/Users", {"schemas": [USER], "userName": "root", "active": True}), 409, "uniqueness")


def test_filter_by_user_name_and_external_id(scim):
    scim.create_user("alice@uni.example", externalId="A-1")
    bob = scim.create_user("bob@uni.example", externalId="B-2")
    UserFactory(username="not-provisioned")
    found = scim.get('/Users?filter=userName eq "BOB@uni.example"').json()
    assert found["totalResults"] == 1 and found["Resources"][0]["id"] == bob["id"]
    found = scim.get('/Users?filter=externalId eq "B-2"').json()
    assert [r["id"] for r in found["Resources"]] == [bob["id"]]
    assert scim.get('/Users?filter=externalId eq "b-2"').json()["totalResults"] == 0  # externalId is caseExact
    assert scim.get('/Users?filter=userName sw "ali"').json()["totalResults"] == 1  # evaluated by scim2-models
    assert scim.get('/Users?filter=userName eq "not-provisioned"').json()["totalResults"] == 0


def test_list_pages_with_start_index_and_count(scim):
    ids = [scim.create_user(f"user-{n}")["id"] for n in range(5)]
    page = scim.get("/Users?startIndex=2&count=2").json()
    assert (page["totalResults"], page["startIndex"], page["itemsPerPage"]) == (5, 2, 2)
    assert [r["id"] for r in page["Resources"]] == ids[1:3]
    empty = scim.get("/Users?count=0").json()
    assert (empty["totalResults"], empty["itemsPerPage"], empty.get("Resources", [])) == (5, 0, [])


@pytest.fixture
def provisioned(scim, org):
    """A provisioned member of the org, signed in in a browser and holding an API token."""
    created = scim.create_user("dana", emails=[{"value": "dana@example.com", "primary": True}])
    user = User.objects.get(username="dana")
    user.set_password(PASSWORD)
    user.save()
    MembershipFactory(user=user, organization=org)
    browser = APIClient()
    assert browser.post("/login/", {"username": "dana", "password": PASSWORD}).status_code == 302
    assert browser.get(f"/orgs/{org.slug}/").status_code == 200
    _token, key = create_token(user=user, name="script", expires_in_days=30, via="page")
    script = APIClient(HTTP_AUTHORIZATION=f"Token {key}")
    assert script.get("/api/v1/organizations/").status_code == 200
    return {"id": created["id"], "user": user, "browser": browser, "script": script}


@pytest.mark.parametrize(
    "operation",
    [
        {"op": "replace", "path": "active", "value": False},
        {"op": "Replace", "value": {"active": False}},  # Entra ID's
        {"op": "replace", "value": {"active": "False"}},  # Entra ID's older string form
    ],
    ids=["path", "entra", "entra-string"],
)
def test_deactivation_takes_access_away_at_once(scim, org, provisioned, operation):
    response = scim.patch(f"/Users/{provisioned['id']}", operation)
    assert response.status_code == 200 and response.json()["active"] is False
    user = provisioned["user"]
    user.refresh_from_db()
    assert not user.is_active
    assert provisioned["script"].get("/api/v1/organizations/").status_code == 401
    assert ApiToken.objects.get(user=user).revoked_at is not None
    page = provisioned["browser"].get(f"/orgs/{org.slug}/")
    assert page.status_code == 302 and page["Location"].startswith("/login/")
    assert not [s for s in Session.objects.all() if s.get_decoded().get("_auth_user_id") == str(user.pk)]
    event = AuditEvent.objects.get(organization=org, action="scim.user_deactivated")
    assert "1 API token(s) revoked, 1 session(s) ended" in event.comment
    assert Membership.objects.filter(user=user, organization=org).exists()  # nothing is taken but access


def test_reactivation_restores_sign_in_but_not_revoked_tokens(scim, org, provisioned):
    scim.patch(f"/Users/{provisioned['id']}", {"op": "replace", "path": "active", "value": False})
    response = scim.patch(f"/Users/{provisioned['id']}", {"op": "replace", "path": "active", "value": True})
    assert response.json()["active"] is True
    signed_in = APIClient().post("/login/", {"username": "dana", "password": PASSWORD})
    assert signed_in.status_code == 302 and signed_in.wsgi_request.user.username == "dana"
    assert provisioned["script"].get("/api/v1/organizations/").status_code == 401
    assert AuditEvent.objects.filter(organization=org, action="scim.user_reactivated").exists()


def test_delete_deactivates_and_unlinks_but_keeps_the_account(scim, org, provisioned):
    assert scim.delete(f"/Users/{provisioned['id']}").status_code == 204
    user = User.objects.get(pk=provisioned["user"].pk)  # the author of their records stays
    assert not user.is_active
    assert not ScimUser.objects.filter(user=user).exists()
    assert_scim_error(scim.get(f"/Users/{provisioned['id']}"), 404)
    assert provisioned["script"].get("/api/v1/organizations/").status_code == 401


def test_put_replaces_the_attributes(scim):
    created = scim.create_user("erin", name={"givenName": "Erin"}, displayName="Erin E.", externalId="e")
    response = scim.put(f"/Users/{created['id']}", {"schemas": [USER], "userName": "erin2", "active": True})
    assert response.status_code == 200
    body = response.json()
    assert body["userName"] == "erin2"
    assert "name" not in body and "displayName" not in body and "externalId" not in body
    assert User.objects.get(pk=ScimUser.objects.get().user_id).first_name == ""
