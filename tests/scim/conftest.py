import json

import pytest
from django.test import Client

from tenants.scim import tokens

CONTENT_TYPE = "application/scim+json"
USER = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group"
PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
ERROR = "urn:ietf:params:scim:api:messages:2.0:Error"


class ScimClient:
    """Django's test client as a SCIM client: its bearer token on every request, bodies as application/scim+json."""

    def __init__(self, key: str):
        self.client = Client()
        self.key = key

    def request(self, method: str, path: str, body=None, **extra):
        extra.setdefault("HTTP_AUTHORIZATION", f"Bearer {self.key}")
        data = json.dumps(body) if body is not None and not isinstance(body, str) else body
        return self.client.generic(method, f"/scim/v2{path}", data or "", content_type=CONTENT_TYPE, **extra)

    def get(self, path, **extra):
        return self.request("GET", path, **extra)

    def post(self, path, body, **extra):
        return self.request("POST", path, body, **extra)

    def put(self, path, body, **extra):
        return self.request("PUT", path, body, **extra)

    def patch(self, path, *operations, **extra):
        return self.request("PATCH", path, {"schemas": [PATCH], "Operations": list(operations)}, **extra)

    def delete(self, path, **extra):
        return self.request("DELETE", path, **extra)

    def create_user(self, user_name: str, **attributes) -> dict:
        body = {"schemas": [USER], "userName": user_name, "active": True, **attributes}
        response = self.post("/Users", body)
        assert response.status_code == 201, response.content
        return response.json()

    def create_group(self, name: str, *member_ids: str) -> dict:
        body = {"schemas": [GROUP], "displayName": name, "members": [{"value": m} for m in member_ids]}
        response = self.post("/Groups", body)
        assert response.status_code == 201, response.content
        return response.json()


@pytest.fixture
def scim_token(db):
    return tokens.issue_token(name="Entra ID (test)")


@pytest.fixture
def scim(scim_token) -> ScimClient:
    return ScimClient(scim_token[1])


def assert_scim_error(response, status: int, scim_type: str | None = ...) -> dict:
    """The response is a SCIM error of `status` (and of `scim_type`, None for none, when given)."""
    assert response.status_code == status, response.content
    assert response["Content-Type"] == CONTENT_TYPE
    body = response.json()
    assert body["schemas"] == [ERROR]
    assert body["status"] == str(status)
    assert scim_type is ... or body.get("scimType") == scim_type, body
    return body
