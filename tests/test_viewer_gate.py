"""A viewer reads and changes nothing: every route of the URL conf that takes a write method (a page's POST, the API's
POST/PUT/PATCH/DELETE) refuses a viewer of the organization owning the object with a 403 (or 405: the route does not
take the method), and nothing in the database changes.

The routes are found by walking the URL conf, as tests/test_tenant_gate.py does, so a new write route is covered
without anyone remembering to add it: a route whose arguments this test cannot fill fails until it is taught here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from tenants.models import AuditEvent, CapacityPool, Membership
from tests.factories import TENANT_FACTORIES, CapacityPoolFactory, MembershipFactory, OrganizationFactory
from tests.test_tenant_gate import PROGRAM_WIDE, SKIPPED_NAMESPACES, route_kwargs

WRITE_METHODS = ("post", "put", "patch", "delete")
# Routes whose write methods change nothing of an organization's: what a person does for themselves.
NOT_ORGANIZATION_WRITES = {
    "login": "signing in",
    "saml-login": "signing in through a SAML IdP (a GET: a redirect to the IdP)",
    "saml-acs": "signing in through a SAML IdP (its answer, verified; the person's own account)",
    "saml-metadata": "the SP metadata, read only",
    "logout": "signing out",
    "oidc-backchannel-logout": "a provider ending sessions with a logout token it signed (no session, no organization)",
    "set_language": "the reader's own language",
    "api-token": "signing in for an API token (the token carries the person's roles: a viewer's only reads)",
    "account-tokens": "a person's own API tokens (a viewer's token only reads)",
    "account-token-revoke": "a person's own API tokens",
    "token-detail": "a person's own API tokens",
    "api-estimate": "computes a compute estimate, stores nothing",
    "capacity-estimate": "computes a compute estimate, stores nothing",
    "invitation": "accepting one's own invitation",
    "password_reset": "asking for one's own password reset link",
    "password_reset_confirm": "setting one's own password through the emailed link",
    "two-factor-verify": "entering one's own second-factor code",
}
# Arguments naming program-wide objects, not an organization's: a value any test database has.
PROGRAM_WIDE_VALUES: dict[str, Callable[[], str]] = {
    "instance-type-detail": lambda: "p5.48xlarge",
    "pool-detail": lambda: str(CapacityPoolFactory().pk),
    "pool-timeline": lambda: str(CapacityPoolFactory().pk),
    "review:week": lambda: "2027-W02",
    "review:meeting-save": lambda: "2027-W02",
    "review:action-item-add": lambda: "2027-W02",
}


@dataclass(frozen=True)
class Route:
    name: str
    pattern: str
    kwargs: tuple[str, ...]
    callback: Callable
    methods: tuple[str, ...]


def _view_class(callback):
    return getattr(callback, "cls", None) or getattr(callback, "view_class", None)


def _write_methods(callback) -> tuple[str, ...]:
    actions = getattr(callback, "actions", None)  # a viewset route knows its methods
    if actions is not None:
        return tuple(m for m in WRITE_METHODS if m in actions)
    view_class = _view_class(callback)
    if view_class is not None:
        return tuple(m for m in WRITE_METHODS if hasattr(view_class, m))
    return ("post",)  # a function view: its decorators say whether it takes a POST (405 if not)


def _walk(patterns, namespace: str = "") -> Iterator[Route]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            if entry.namespace in SKIPPED_NAMESPACES:
                continue
            yield from _walk(entry.url_patterns, f"{namespace}{entry.namespace}:" if entry.namespace else namespace)
        elif isinstance(entry, URLPattern):
            kwargs = tuple(entry.pattern.regex.groupindex)
            if "format" in kwargs or not entry.name:
                continue  # the same view as the route without a format suffix
            methods = _write_methods(entry.callback)
            if methods:
                yield Route(f"{namespace}{entry.name}", str(entry.pattern), kwargs, entry.callback, methods)


ROUTES = sorted(
    (
        r
        for r in _walk(get_resolver().url_patterns)
        # SCIM provisioning's routes take a SCIM token, never a session: anyone signed in, a viewer or program
        # staff, is refused there (tests/test_tenant_gate.py, test_a_session_is_no_scim_client).
        if r.name not in NOT_ORGANIZATION_WRITES and not r.pattern.startswith("scim/")
    ),
    key=lambda r: r.name,
)


def _tenant_model(route: Route):
    return getattr(_view_class(route.callback), "model", None) or getattr(route.callback, "tenant_model", None)


def _kwargs(route: Route, org) -> dict[str, str]:
    if route.name in PROGRAM_WIDE_VALUES:
        return {route.kwargs[0]: PROGRAM_WIDE_VALUES[route.name]()}
    if route.name in PROGRAM_WIDE:  # program staff's records: refused to anyone else before the lookup
        return {kwarg: "1" for kwarg in route.kwargs}
    for kwarg in route.kwargs:
        if kwarg != "org_slug":
            model = _tenant_model(route)
            assert model is not None, f"{route.name} takes {kwarg!r}: teach this test which object it names."
    return route_kwargs(route, org)  # one object of the org, and its parent's id where the route names it too


def _counts() -> dict[str, int]:
    models = {AuditEvent, Membership, CapacityPool, *TENANT_FACTORIES}
    return {model.__name__: model._default_manager.count() for model in models}


def test_the_walker_finds_the_write_routes():
    names = {r.name for r in ROUTES}
    assert {"capacity-request-list", "workload-detail", "support:comment", "clusters:create"} <= names
    assert {"organization-member-detail", "organization-invitation-list", "members:invite"} <= names
    assert set(NOT_ORGANIZATION_WRITES) <= {r.name for r in _walk(get_resolver().url_patterns)}


@pytest.mark.django_db
@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.name)
def test_a_viewer_writes_nothing(client, route):
    org = OrganizationFactory()
    viewer = MembershipFactory(organization=org, role=Membership.Role.VIEWER).user
    MembershipFactory(organization=org, role=Membership.Role.ADMIN)  # someone the org's member routes can name
    client.force_login(viewer)
    url = reverse(route.name, kwargs=_kwargs(route, org))
    before = _counts()
    statuses = {}
    for method in route.methods:
        statuses[method] = getattr(client, method)(url, data={}, content_type="application/json").status_code
    assert set(statuses.values()) <= {403, 405}, f"{route.name} {route.pattern}: {statuses}"
    assert 403 in statuses.values() or route.methods == ("post",), f"{route.name}: {statuses}"
    assert _counts() == before


@pytest.mark.django_db
def test_the_api_tells_a_viewer_why(client):
    org = OrganizationFactory()
    client.force_login(MembershipFactory(organization=org, role=Membership.Role.VIEWER).user)
    response = client.post(reverse("workload-list"), data={"organization": org.slug}, content_type="application/json")
    assert response.status_code == 403
    assert "viewer" in response.json()["detail"]
    workload = TENANT_FACTORIES[next(m for m in TENANT_FACTORIES if m.__name__ == "Workload")](organization=org)
    response = client.patch(reverse("workload-detail", kwargs={"pk": workload.pk}), data={"notes": "x"},
                            content_type="application/json")  # fmt: skip
    assert response.status_code == 403 and "viewer" in response.json()["detail"]


@pytest.mark.django_db
def test_a_viewer_who_is_a_member_elsewhere_is_still_refused_in_the_viewed_org(client):
    viewed, own = OrganizationFactory(), OrganizationFactory()
    person = MembershipFactory(organization=viewed, role=Membership.Role.VIEWER).user
    MembershipFactory(organization=own, user=person, role=Membership.Role.MEMBER)
    workload = TENANT_FACTORIES[next(m for m in TENANT_FACTORIES if m.__name__ == "Workload")](organization=viewed)
    client.force_login(person)
    response = client.patch(reverse("workload-detail", kwargs={"pk": workload.pk}), data={"notes": "x"},
                            content_type="application/json")  # fmt: skip
    assert response.status_code == 403
    assert viewed.name in response.json()["detail"]
    response = client.post(reverse("records:create", kwargs={"org_slug": viewed.slug}), data={})
    assert response.status_code == 403


@pytest.mark.django_db
def test_a_viewer_sees_no_write_buttons(client):
    from tests.factories import ActiveAllocationFactory, ClusterFactory, SupportCaseFactory, WorkloadFactory

    org = OrganizationFactory()
    viewer = MembershipFactory(organization=org, role=Membership.Role.VIEWER).user
    allocation = ActiveAllocationFactory(organization=org)
    workload = WorkloadFactory(organization=org)
    cluster = ClusterFactory(organization=org, allocation=allocation)
    case = SupportCaseFactory(organization=org)
    client.force_login(viewer)
    pages = [
        reverse("org-home", args=[org.slug]),
        reverse("capacity", args=[org.slug]),
        reverse("members:list", args=[org.slug]),
        reverse("usage:org", args=[org.slug]),
        reverse("records:tracking"),
        reverse("records:detail", args=[workload.pk]),
        reverse("clusters:list"),
        reverse("clusters:detail", args=[cluster.pk]),
        reverse("reporting:cluster", args=[cluster.pk]),
        reverse("support:list"),
        reverse("support:detail", args=[case.pk]),
    ]
    writes = ("/new/", "/edit/", "/delete/", "/retry/", "/comment/", "/update/", "/invite/", "/role/", "/remove/")
    for url in pages:
        response = client.get(url)
        assert response.status_code == 200, url
        body = response.content.decode()
        posts = [action for action in re.findall(r'<form[^>]*method="post"[^>]*action="([^"]*)"', body)]
        posts += re.findall(r'<form[^>]*action="([^"]*)"[^>]*method="post"', body)
        assert set(posts) <= {reverse("logout"), reverse("set_language")}, (url, posts)
        assert not [w for w in writes if f'{w}"' in body or f"{w}?" in body], (url, [w for w in writes if w in body])
    # The same pages offer those buttons to a member: the checks above can see them.
    Membership.objects.filter(user=viewer).update(role=Membership.Role.MEMBER)
    assert reverse("capacity-request-new", args=[org.slug]) in client.get(reverse("capacity", args=[org.slug])).text
    assert f"/support/{case.pk}/comment/" in client.get(reverse("support:detail", args=[case.pk])).text
