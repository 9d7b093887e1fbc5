import pytest
from django.core.management import call_command

from tests.factories import PASSWORD, CapacityPoolFactory


@pytest.mark.django_db
def test_token_from_username_and_password_authenticates_scripts(api_client, member, org):
    response = api_client.post("/api/v1/auth/token/", {"username": member.username, "password": PASSWORD})
    assert response.status_code == 201
    key = response.json()["token"]

    api_client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    listing = api_client.get("/api/v1/organizations/")
    assert listing.status_code == 200
    assert [o["slug"] for o in listing.json()["results"]] == [org.slug]


@pytest.mark.django_db
def test_token_with_bad_password_is_400_with_a_message(api_client, member):
    response = api_client.post("/api/v1/auth/token/", {"username": member.username, "password": "wrong"})
    assert response.status_code == 400
    assert response.json() == {"non_field_errors": ["Unable to log in with provided credentials."]}


@pytest.mark.django_db
def test_token_without_fields_names_each_missing_field(api_client):
    response = api_client.post("/api/v1/auth/token/", {}, format="json")
    assert response.status_code == 400
    assert set(response.json()) == {"username", "password"}


@pytest.mark.django_db
def test_api_without_credentials_is_401_json(api_client, org):
    response = api_client.get("/api/v1/organizations/", HTTP_AUTHORIZATION="Token not-a-real-token")
    assert response.status_code == 401
    assert response.json() == {"detail": "Invalid token."}


@pytest.mark.django_db
def test_tenant_lists_only_its_own_orgs(member_api, org, other_org):
    slugs = [o["slug"] for o in member_api.get("/api/v1/organizations/").json()["results"]]
    assert slugs == [org.slug]
    assert member_api.get(f"/api/v1/organizations/{other_org.slug}/").status_code == 404


@pytest.mark.django_db
def test_staff_lists_every_org(api_client, manager, org, other_org):
    api_client.force_authenticate(manager)
    body = api_client.get("/api/v1/organizations/").json()
    assert body["count"] == 2


@pytest.mark.django_db
def test_organizations_are_read_only(member_api, org):
    response = member_api.patch(f"/api/v1/organizations/{org.slug}/", {"name": "x"}, format="json")
    assert response.status_code == 405


@pytest.mark.django_db
def test_instance_types_carry_prices_per_region(member_api):
    response = member_api.get("/api/v1/instance-types/p5.48xlarge/")
    assert response.status_code == 200
    body = response.json()
    assert body["accelerators_per_instance"] == 8
    assert {p["region"]: p["usd_per_hour"] for p in body["prices"]} == {
        "ap-northeast-1": "68.8000",
        "us-east-1": "55.0400",
    }


@pytest.mark.django_db
def test_pools_filter_by_region(member_api):
    CapacityPoolFactory(region="us-east-1", total_instances=64)
    CapacityPoolFactory(region="ap-northeast-1", total_instances=63)
    body = member_api.get("/api/v1/pools/?region=ap-northeast-1").json()
    assert [p["total_instances"] for p in body["results"]] == [63]


@pytest.mark.django_db
def test_unknown_filter_value_is_400_with_field_message(member_api):
    response = member_api.get("/api/v1/pools/?region=mars-1")
    assert response.status_code == 400
    assert "region" in response.json()


@pytest.mark.django_db
def test_schema_is_openapi_3_and_documents_the_endpoints(client):
    response = client.get("/api/schema/?format=json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    for path in ("/api/v1/auth/token/", "/api/v1/organizations/", "/api/v1/instance-types/", "/api/v1/pools/"):
        assert path in schema["paths"], path
    assert "tokenAuth" in schema["components"]["securitySchemes"]


def test_schema_validates_without_a_warning(tmp_path):
    """Every view's serializer is found and every enum gets a stable name (clients generate code from it)."""
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yml"))


@pytest.mark.django_db
def test_api_docs_need_no_cdn(client):
    response = client.get("/api/docs/")
    assert response.status_code == 200
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/" in response.text
    assert "cdn." not in response.text and "jsdelivr" not in response.text
