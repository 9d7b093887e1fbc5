"""The OpenAPI schema says what every field is (docs/api.md): a script writer reads /api/docs/, not our models.
Walked generically over every component, request and response, nested objects included, so a new endpoint's
fields are checked by being in the schema."""

from __future__ import annotations

import re
from collections.abc import Iterator

from drf_spectacular.generators import SchemaGenerator

# Django's help text of User.username: it describes the user form's validation, and leaks into every field that
# names a person by username unless that field says whose username it is.
USER_FORM_TEXT = ("150 characters or fewer", "Letters, digits and @/./+/-/_ only")


def properties(schema: dict, path: str) -> Iterator[tuple[str, str, dict]]:
    """(path, name, schema) of every property of `schema`, into inline objects, array items and allOf/oneOf/anyOf
    parts (a $ref is a component of its own, walked as one)."""
    for name, prop in schema.get("properties", {}).items():
        yield f"{path}.{name}", name, prop
        yield from properties(prop, f"{path}.{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            yield from properties(schema[key], f"{path}[]")
    for key in ("allOf", "oneOf", "anyOf"):
        for part in schema.get(key, []):
            yield from properties(part, path)


def words(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def schema_problems() -> list[tuple[str, str]]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    components = schema["components"]["schemas"]
    assert any("properties" in body for body in components.values())  # not vacuously true
    found = []
    for component, body in components.items():
        for path, name, prop in properties(body, component):
            description = prop.get("description", "").strip()
            if not description:
                found.append((path, "no description"))
            elif any(text in description for text in USER_FORM_TEXT):
                found.append((path, "the User model's username help text"))
            elif words(description) in {words(name), words(prop.get("title", ""))}:
                found.append((path, f"only repeats the field's name: {description!r}"))
    return found


def report(found: list[tuple[str, str]]) -> str:
    return f"{len(found)} schema properties:\n" + "\n".join(f"  {path}: {problem}" for path, problem in found)


def test_no_field_carries_the_user_forms_help_text():
    found = [(path, problem) for path, problem in schema_problems() if "username help text" in problem]
    assert not found, report(found)


def test_every_schema_property_says_what_it_is():
    found = schema_problems()
    assert not found, report(found)


# --- What an operation answers (portal.schema): every status code, nullability, bounds ------------------------------

ID_MAX = 2**63 - 1


def openapi() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)


WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")


def operations(schema: dict) -> Iterator[tuple[str, dict]]:
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            yield f"{method.upper()} {path}", operation


def test_every_error_is_documented_with_the_body_the_api_sends():
    found = []
    for label, operation in operations(openapi()):
        responses = operation["responses"]
        expected = {"401"} if label != "POST /api/v1/auth/token/" else {"400", "429"}
        if any(p["in"] == "path" for p in operation.get("parameters", [])):
            expected.add("404")
        if "requestBody" in operation:
            expected.add("400")
        if missing := expected - set(responses):
            found.append(f"{label}: no {sorted(missing)}")
        for code, response in responses.items():
            if code.startswith("4"):
                body = response.get("content", {}).get("application/json", {}).get("schema", {})
                want = "#/components/schemas/FieldErrors" if code == "400" else "#/components/schemas/Error"
                if body.get("$ref") != want:
                    found.append(f"{label} {code}: body {body}, not {want}")
    assert not found, "\n".join(found)


def test_staff_only_reads_and_ingest_limits_and_idempotent_deletes_say_so():
    schema = openapi()
    paths = schema["paths"]
    assert "403" in paths["/api/v1/review-meetings/"]["get"]["responses"]  # program staff only
    assert "403" not in paths["/api/v1/workloads/"]["get"]["responses"]  # any member reads
    ingest = paths["/api/v1/clusters/{id}/jobs/ingest/"]["post"]["responses"]
    assert {"409", "411", "413"} <= set(ingest) and "415" not in ingest  # the ingest reads any content type
    assert "400" not in paths["/api/v1/auth/tokens/{id}/"]["delete"]["responses"]  # revoking twice is fine
    assert "400" in paths["/api/v1/clusters/{id}/"]["delete"]["responses"]  # a cluster already deleting
    assert "404" in paths["/api/v1/workloads/"]["post"]["responses"]  # an organization slug not yours
    assert "404" not in paths["/api/v1/capacity-requests/"]["post"]["responses"]  # there it is a 400
    headers = paths["/api/v1/auth/token/"]["post"]["responses"]["429"]["headers"]
    assert "Retry-After" in headers


def test_recording_a_week_that_has_a_meeting_is_a_documented_200():
    responses = openapi()["paths"]["/api/v1/review-meetings/"]["post"]["responses"]
    assert responses["201"]["content"] == responses["200"]["content"]


def test_a_field_that_can_be_null_says_so():
    components = openapi()["components"]["schemas"]
    nullable = [
        ("Allocation", "revoked_by"),  # a read-only related field over a nullable foreign key
        ("Allocation", "request"),
        ("CapacityRequest", "decided_by"),
        ("CapacityRequest", "allocation"),
        ("Organization", "lead_engineer"),
        ("SupportCase", "time_to_first_response"),  # a method field: said by its declaration
        ("SupportCaseDetail", "time_to_first_response"),
    ]
    assert [(c, f) for c, f in nullable if not components[c]["properties"][f].get("nullable")] == []
    assert not components["Allocation"]["properties"]["instance_count"].get("nullable")


def test_the_documented_bounds_are_the_ones_validation_applies():
    schema = openapi()
    components = schema["components"]["schemas"]
    for component, field in [
        ("CapacityRequestRequest", "parameter_count"),
        ("CapacityRequestRequest", "training_tokens"),
        ("EstimateRequest", "parameter_count"),
        ("EstimateRequest", "parameters"),  # the deprecated name takes what the new one takes
        ("EstimateRequest", "tokens"),
        ("WorkloadRequest", "parameter_count"),
        ("WorkloadRequest", "training_tokens"),
        ("PatchedWorkloadDetailRequest", "parameter_count"),
    ]:
        assert components[component]["properties"][field]["minimum"] == 1_000_000, (component, field)
    for component, field in [("ClusterCreateRequest", "allocation"), ("WorkloadRequest", "allocation")]:
        prop = components[component]["properties"][field]
        assert (prop["minimum"], prop["maximum"]) == (1, ID_MAX), (component, field)
    assert components["WorkloadRequest"]["properties"]["organization"]["maxLength"] == 50
    assert components["CapacityRequestRequest"]["properties"]["instance_type"]["maxLength"] == 40
    # Integer parameters are ids, bounded as ids; the few that count something say their own bounds.
    counts = {("GET /api/v1/workloads/{id}/progress/", "points"): (0, 1000)}
    integers = 0
    for label, operation in operations(schema):
        for parameter in operation.get("parameters", []):
            if parameter["schema"].get("type") == "integer":
                integers += 1
                bounds = (parameter["schema"].get("minimum"), parameter["schema"].get("maximum"))
                assert bounds == counts.get((label, parameter["name"]), (1, ID_MAX)), (label, parameter["name"], bounds)
    assert integers > 20, integers  # the schema's id parameters were found and read


def test_a_body_that_refuses_unknown_fields_says_additional_properties_false():
    """Every write's serializer refuses a field it does not take (portal.serializers.WriteRules): its request
    objects, nested ones included, say so; and every write
    documents the body limit's 413 (portal.parsers)."""
    schema = openapi()
    components = schema["components"]["schemas"]
    requests = set()
    for _label, operation in operations(schema):
        for media in operation.get("requestBody", {}).get("content", {}).values():
            ref = media["schema"].get("$ref", "")
            if ref:
                requests.add(ref.rsplit("/", 1)[-1])
    assert len(requests) > 20
    for name in sorted(requests):
        body = components[name]
        if body.get("type") == "object" and "properties" in body:
            assert body.get("additionalProperties") is False, name
            for _path, _prop_name, prop in properties(body, name):
                if prop.get("type") == "object" and "properties" in prop:
                    assert prop.get("additionalProperties") is False, (name, _prop_name)
    assert components["WhatIfRequest"]["additionalProperties"] is False  # nested, by reference
    writes = [(label, operation) for label, operation in operations(schema) if label.split()[0] in WRITE_METHODS]
    assert len(writes) > 20, len(writes)  # the schema's writes were found
    for label, operation in writes:
        assert "413" in operation["responses"], label
