"""A schema-driven fuzzer over the whole API: every operation of the OpenAPI schema, as a tenant and as a program
manager, with real ids for object routes (taken from the list endpoints), gets malformed bodies, query strings
and path ids. Nothing answers 5xx, and every error is JSON. A new endpoint is covered by being in the schema."""

from __future__ import annotations

import json
import re

import pytest
from django.core.management import call_command
from django.urls import reverse
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from tenants.models import Membership, Organization, Program, StaffRole
from tests.factories import (
    BudgetFactory,
    DeliverableFactory,
    MembershipFactory,
    MilestoneFactory,
    ReportFactory,
    StaffRoleFactory,
)
from tests.test_tenant_gate import ROUTES

pytestmark = pytest.mark.django_db

TOO_BIG = "9223372036854775808"  # one past the largest 64-bit integer
QUERY_VALUES = [TOO_BIG, "-" + TOO_BIG, "abc", "", "-1", "2027-99-99", "a\x00b", "x" * 2000]
BODIES = [0, None, False, [{}], "text", {}, [], 1e309]
PATH_VALUES = [TOO_BIG, "0", "abc"]


def operations() -> list[tuple[str, str, dict]]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    found = []
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            if method in ("get", "post", "put", "patch", "delete"):
                found.append((path, method, operation))
    return found


def wrong_values(operation: dict, schema: dict) -> list[dict]:
    """Bodies with every property of the request schema given a wrong type, a huge value, or null."""
    content = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
    ref = content.get("schema", {}).get("$ref", "")
    component = schema["components"]["schemas"].get(ref.rsplit("/", 1)[-1], {}) if ref else {}
    properties = component.get("properties", {})
    if not properties:
        return []
    return [
        {name: 12345 if spec.get("type") == "string" else "not-a-number" for name, spec in properties.items()},
        {name: "x" * 100_001 if spec.get("type") == "string" else int(TOO_BIG) for name, spec in properties.items()},
        {name: None for name in properties},
        {name: "a\x00b" for name in properties},
        {name: [1, {"a": 2}] for name in properties},
    ]


@pytest.fixture
def program_data(catalog):
    call_command("load_demo", "--start", "2026-10-01")
    call_command("load_demo_workloads")
    call_command("load_cluster_demo")
    # Outcomes of the tenant's organization and the program's budget (load_demo_outcomes would render PDFs).
    sakura, program = Organization.objects.get(slug="sakura-lab"), Program.objects.get(slug="fm-program-demo")
    MilestoneFactory(organization=sakura)
    DeliverableFactory(organization=sakura)
    BudgetFactory(program=program, organization=sakura)
    BudgetFactory(program=program, organization=None)
    ReportFactory(program=program, organization=sakura)


def clients() -> dict[str, APIClient]:
    tenant = MembershipFactory(organization=Organization.objects.get(slug="sakura-lab"), role=Membership.Role.ADMIN)
    manager = StaffRoleFactory(role=StaffRole.Role.PROGRAM_MANAGER)
    made = {}
    for name, user in (("tenant", tenant.user), ("manager", manager.user)):
        client = APIClient(raise_request_exception=False)
        client.force_authenticate(user)
        made[name] = client
    return made


def first_id(client: APIClient, path: str) -> str | None:
    """A real id (or slug) for `{…}` in an object route: the first row of the list route above it."""
    list_path = path[: path.index("{")]
    response = client.get(list_path)
    if response.status_code != 200:
        return None
    body = response.json()
    rows = body.get("results", body) if isinstance(body, dict) else body
    if not rows or not isinstance(rows, list):
        return None
    key = re.search(r"\{(\w+)\}", path).group(1)
    row = rows[0]
    return str(row.get(key) or row.get("slug") or row.get("id") or "")


def check(response, label: str, problems: list[str]) -> None:
    if response.status_code >= 500:
        problems.append(f"{label} → {response.status_code}")
    elif response.status_code >= 400 and "json" not in response.get("Content-Type", ""):
        problems.append(f"{label} → {response.status_code} as {response.get('Content-Type')}")


def test_no_operation_answers_5xx_or_a_non_json_error(program_data):
    schema = SchemaGenerator().get_schema(request=None, public=True)
    problems: list[str] = []
    for who, client in clients().items():
        for path, method, operation in operations():
            real = first_id(client, path) if "{" in path else None
            concrete = re.sub(r"\{\w+\}", real or "1", path, count=1)
            concrete = re.sub(r"\{\w+\}", "1", concrete)
            call = getattr(client, method)
            label = f"{who} {method.upper()} {path}"
            for name in [p["name"] for p in operation.get("parameters", []) if p["in"] == "query"]:
                for value in QUERY_VALUES:
                    check(client.get(concrete, {name: value}) if method == "get" else call(concrete, format="json"),
                          f"{label} ?{name}={value[:20]!r}", problems)  # fmt: skip
            if "{" in path:
                for value in PATH_VALUES:
                    check(call(re.sub(r"\{\w+\}", value, path), format="json"), f"{label} with id {value}", problems)
            if method in ("post", "put", "patch"):
                for body in [*BODIES, *wrong_values(operation, schema)]:
                    raw = json.dumps(body)
                    response = call(concrete, data=raw, content_type="application/json")
                    check(response, f"{label} body {raw[:40]}", problems)
                check(call(concrete, data="{not json", content_type="application/json"), f"{label} bad JSON", problems)
                huge = json.dumps({"description": "x" * 3_000_000})
                check(call(concrete, data=huge, content_type="application/json"), f"{label} 3 MB body", problems)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("route", [r for r in ROUTES if "pk" in r.kwargs or "id" in r.kwargs], ids=lambda r: r.name)
def test_an_id_beyond_the_databases_range_is_404_on_every_object_route(client, manager, route):
    """Pages and API alike: a path id past 64 bits is "no such object", never an overflow in the database."""
    client.force_login(manager)
    kwargs = {name: (TOO_BIG if name in ("pk", "id") else "sakura-lab") for name in route.kwargs if name != "format"}
    url = reverse(route.name, kwargs=kwargs)
    client.raise_request_exception = False
    assert route.methods, route.name
    for method in route.methods:
        response = client.generic(method, url)
        assert response.status_code in (404, 405), (method, url, response.status_code)
