"""Every API write refuses a malformed body the same way (docs/api.md; portal/parsers.py): JSON nested deeper than
MAX_JSON_DEPTH is a 400 "nested too deeply (limit N)", a body over the limit a 413 naming the limit — on every write
endpoint, found by walking the URL conf (as tests/test_tenant_gate.py does), before anyone signs in."""

from collections.abc import Iterator

import pytest
from django.conf import settings
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse
from rest_framework.test import APIClient

from portal.parsers import MAX_JSON_DEPTH, max_body_bytes
from workloads.reporting.ingest import MAX_BYTES as INGEST_MAX_BYTES
from workloads.reporting.ingest import ClusterIngestView

WRITES = ("POST", "PUT", "PATCH", "DELETE")
DEEP = "[" * 2000 + "]" * 2000
TOO_DEEP = f"JSON parse error - nested too deeply (limit {MAX_JSON_DEPTH})."


def _methods(callback) -> tuple[str, ...]:
    actions = getattr(callback, "actions", None)  # a DRF viewset route knows its methods
    if actions:
        return tuple(m.upper() for m in actions if m.upper() in WRITES)
    view_class = getattr(callback, "cls", None) or getattr(callback, "view_class", None)
    if view_class is None:
        return ()
    return tuple(m for m in WRITES if hasattr(view_class, m.lower()))


def _walk(patterns, prefix: str = "", namespace: str = "") -> Iterator[tuple[str, str, tuple[str, ...], object]]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from _walk(entry.url_patterns, prefix + str(entry.pattern), inner)
        elif isinstance(entry, URLPattern):
            kwargs = tuple(entry.pattern.regex.groupindex)
            if "format" in kwargs or not entry.name:
                continue  # the same route with a format suffix
            yield f"{namespace}{entry.name}", prefix + str(entry.pattern), kwargs, entry.callback


def _write_routes() -> list[tuple[str, str, str]]:
    routes = []
    for name, pattern, kwargs, callback in _walk(get_resolver().url_patterns):
        if not pattern.lstrip("^").startswith(("api/", "scim/")):
            continue
        url = reverse(name, kwargs={kwarg: "1" for kwarg in kwargs})
        routes += [(name, method, url) for method in _methods(callback)]
    return sorted(set(routes))


WRITE_ROUTES = _write_routes()
SCIM_ERROR = "urn:ietf:params:scim:api:messages:2.0:Error"


def _detail(url: str, response) -> str:
    """The refusal's words: the API's {"detail": …}, or SCIM's error (tenants/scim/) under /scim/."""
    body = response.json()
    if url.startswith("/scim/"):
        assert response["Content-Type"] == "application/scim+json"
        assert body["schemas"] == [SCIM_ERROR] and body["status"] == str(response.status_code), body
        return body["detail"]
    assert set(body) == {"detail"}, body
    return body["detail"]


IDS = [f"{method} {name}" for name, method, _url in WRITE_ROUTES]


def test_the_walk_finds_the_write_endpoints():
    names = {name for name, _method, _url in WRITE_ROUTES}
    assert {"api-token", "workload-list", "api-estimate", "capacity-plan-list", "cluster-jobs-ingest"} <= names, names
    assert {"scim-users", "scim-user", "scim-groups", "scim-group"} <= names, names
    assert len(WRITE_ROUTES) >= 40  # every method of every write route, 40 today


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "method", "url"), WRITE_ROUTES, ids=IDS)
def test_json_nested_too_deeply_is_the_same_400_everywhere(name, method, url):
    content_type = "application/scim+json" if url.startswith("/scim/") else "application/json"  # SCIM's own type
    response = APIClient().generic(method, url, DEEP, content_type=content_type)
    assert response.status_code == 400, response.content[:300]
    assert _detail(url, response) == TOO_DEEP


def _limit(url: str) -> int:
    """The route's limit; only the ingest endpoints (the one documented exception) have one of their own."""
    view = resolve(url).func
    view_class = getattr(view, "cls", None) or getattr(view, "view_class", None)
    limit = max_body_bytes(view)
    assert limit == (INGEST_MAX_BYTES if issubclass(view_class, ClusterIngestView) else 5 * 2**19)
    return limit


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "method", "url"), WRITE_ROUTES, ids=IDS)
@pytest.mark.parametrize(
    "content_type", ["application/json", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]
)
def test_a_body_over_the_limit_is_the_same_413_everywhere(name, method, url, content_type):
    limit = _limit(url)
    response = APIClient().generic(method, url, b"{}", content_type=content_type, CONTENT_LENGTH=str(limit + 1))
    assert response.status_code == 413, response.content[:300]
    detail = _detail(url, response)
    megabytes = "20" if limit == INGEST_MAX_BYTES else "2.5"
    assert detail == f"The request body is {megabytes} MB; the limit is {megabytes} MB: nothing of it was read."


@pytest.mark.django_db
@pytest.mark.parametrize("content_type", ["application/json", "application/x-www-form-urlencoded"])
def test_a_real_body_over_two_and_a_half_megabytes_is_a_413_naming_the_limit(content_type):
    body = '{"username": "' + "a" * settings.DATA_UPLOAD_MAX_MEMORY_SIZE + '"}'
    if content_type != "application/json":
        body = "username=" + "a" * settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    response = APIClient().post("/api/v1/auth/token/", body, content_type=content_type)
    assert response.status_code == 413
    assert "the limit is 2.5 MB" in response.json()["detail"]


@pytest.mark.django_db
def test_json_at_the_depth_limit_is_read_and_one_level_more_is_not(member):
    client = APIClient()
    client.force_authenticate(member)
    at_limit = "[" * (MAX_JSON_DEPTH - 1) + "]" * (MAX_JSON_DEPTH - 1)
    response = client.post("/api/v1/workloads/", '{"name": ' + at_limit + "}", content_type="application/json")
    assert response.status_code == 400 and "nested" not in str(response.json())  # read: the name is not a list
    deeper = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    response = client.post("/api/v1/workloads/", '{"name": ' + deeper + "}", content_type="application/json")
    assert response.json() == {"detail": TOO_DEEP}


def test_brackets_inside_strings_are_text_not_depth():
    from portal.parsers import loads

    assert loads('{"sacct": "' + "[" * 5000 + '\\"]"}') == {"sacct": "[" * 5000 + '"]'}
