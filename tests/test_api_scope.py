"""The API's rules beyond the gate (docs/api.md), checked over every operation of the OpenAPI schema:

- a list filter naming another organization's object answers exactly like one naming an object that does not
  exist (no existence oracle);
- the browsable API (?format=api), kept in production for script writers, shows a tenant no other
  organization's name, in its lists or in its filter forms;
- a write naming a field the endpoint does not take is a 400 naming that field.
"""

from __future__ import annotations

import re

import pytest
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from tenants.models import Allocation, Membership, Organization
from tests.factories import TENANT_FACTORIES, MembershipFactory, OrganizationFactory
from workloads.models import Cluster, SupportCase, Workload

pytestmark = pytest.mark.django_db

# Query parameters that name a tenant object, and the model they name.
NAMED = {"organization": Organization, "allocation": Allocation, "workload": Workload, "cluster": Cluster}
NAMED_BY_SLUG = {Organization}


def schema_operations():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            yield path, method, operation


@pytest.fixture
def tenant_api():
    mine, theirs = OrganizationFactory(name="Mine Lab"), OrganizationFactory(name="Zzyzx Secret Lab")
    for org in (mine, theirs):
        for model in (Allocation, Workload, SupportCase, Cluster):
            TENANT_FACTORIES[model](organization=org)
    client = APIClient()
    client.force_authenticate(MembershipFactory(organization=mine, role=Membership.Role.ADMIN).user)
    return client, mine, theirs


def value_of(model, obj) -> str:
    return obj.slug if model in NAMED_BY_SLUG else str(obj.pk)


def made_up(model) -> str:
    if model in NAMED_BY_SLUG:
        return "no-such-org"
    return str((model.objects.order_by("-pk").values_list("pk", flat=True).first() or 0) + 1000)


def shape(response) -> tuple:
    body = response.json()
    if isinstance(body, dict) and "results" in body:
        return response.status_code, body["count"]
    if isinstance(body, dict):
        return response.status_code, tuple(sorted(body))
    return response.status_code, len(body)


def test_a_foreign_object_in_a_filter_answers_like_a_missing_one(tenant_api):
    client, _mine, theirs = tenant_api
    checked = []
    for path, method, operation in schema_operations():
        if method != "get" or "{" in path:
            continue
        for parameter in operation.get("parameters", []):
            model = NAMED.get(parameter["name"])
            if parameter["in"] != "query" or model is None:
                continue
            foreign = (
                model.objects.get(pk=theirs.pk)
                if model is Organization
                else model.objects.filter(organization=theirs).first()
            )
            foreign_answer = client.get(path, {parameter["name"]: value_of(model, foreign)})
            missing_answer = client.get(path, {parameter["name"]: made_up(model)})
            assert shape(foreign_answer) == shape(missing_answer), (path, parameter["name"])
            if foreign_answer.status_code == 403:
                continue  # a staff-only list: the tenant is turned away before any filter
            assert foreign_answer.status_code == 400, (path, parameter["name"], "the rule: not one you can see → 400")
            checked.append(f"{path}?{parameter['name']}")
    assert len(checked) >= 6, checked  # organization on most lists, allocation, workload, cluster…


def test_the_browsable_api_shows_a_tenant_no_other_organization(tenant_api):
    client, mine, theirs = tenant_api
    pages = 0
    for path, method, _operation in schema_operations():
        if method != "get" or "{" in path:
            continue
        response = client.get(path, {"format": "api"}, HTTP_ACCEPT="text/html")
        if response.status_code != 200:
            continue
        html = response.content.decode()
        assert theirs.name not in html and theirs.slug not in html, path
        pages += 1
    assert pages >= 8


def test_a_write_with_an_unknown_field_is_refused_naming_it(tenant_api):
    client, *_ = tenant_api
    refused = []
    for path, method, operation in schema_operations():
        if method not in ("post", "put", "patch") or "requestBody" not in operation:
            continue
        concrete = re.sub(r"\{\w+\}", "1", path)
        response = client.generic(method.upper(), concrete, '{"no_such_field": 1}', content_type="application/json")
        if response.status_code in (403, 404, 405):
            continue  # not this tenant's to write (the gate answers first)
        assert response.status_code == 400 and "no_such_field" in response.json(), (method, path, response.content)
        refused.append(path)
    assert len(refused) >= 6, refused


def test_a_state_change_through_a_read_only_field_is_refused(tenant_api):
    client, mine, _theirs = tenant_api
    created = client.post(
        "/api/v1/support-cases/",
        {"organization": mine.slug, "title": "EFA errors", "description": "x", "category": "networking",
         "severity": "s3", "status": "closed"},
        format="json",
    )  # fmt: skip
    assert created.status_code == 400 and "status" in created.json()
    workload = Workload.objects.filter(organization=mine).first()
    current = client.get(f"/api/v1/workloads/{workload.pk}/").json()
    # Sending back what was read is fine; changing a read-only value is not.
    same = client.patch(f"/api/v1/workloads/{workload.pk}/", {"created_by": current["created_by"]}, format="json")
    assert same.status_code == 200
    changed = client.patch(f"/api/v1/workloads/{workload.pk}/", {"created_by": "someone-else"}, format="json")
    assert changed.status_code == 400 and "created_by" in changed.json()


def test_every_free_text_field_of_a_write_is_bounded():
    """A string a client may send has a max_length: no 100,000-character justification is stored. Checked on
    every serializer of the project, so a new field is covered."""
    from rest_framework import serializers

    from portal import serializers as api
    from tests.test_boundaries import _import_project_modules, _project_subclasses

    _import_project_modules()
    unbounded = []
    for serializer in _project_subclasses(api.WriteRules):
        if serializer.__module__ == "portal.serializers":
            continue
        for name, field in serializer(context={}).fields.items():
            free_text = (
                type(field) is serializers.CharField
                or isinstance(field, serializers.ListField)
                and type(field.child) is serializers.CharField
            )
            bounded = getattr(field, "max_length", None) or getattr(getattr(field, "child", None), "max_length", None)
            if free_text and not field.read_only and not bounded:
                unbounded.append(f"{serializer.__module__}.{serializer.__name__}.{name}")
    assert not unbounded, unbounded
