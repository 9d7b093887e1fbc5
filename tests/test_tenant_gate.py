"""Another tenant's object is a 404, on every route that takes an org slug or an object id.

The routes are found by walking the URL conf, so a new page or API route is covered without anyone
remembering to add it: a route whose arguments this test does not know how to fill fails the test
until it is taught here (or listed as program-wide reference data, with a reason).
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from django.db import models
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from tenants.models import Organization
from tenants.scim import urls as scim_urls
from tenants.tokens.services import create_token
from tests.factories import TENANT_FACTORIES, MembershipFactory, OrganizationFactory

# Routes whose argument names program-wide reference data, identical for every tenant.
PROGRAM_WIDE = {
    "instance-type-detail": "the instance-type catalog is the same for every tenant",
    "pool-detail": "capacity pools are program-level; tenants need them to request capacity",
    "pool-timeline": "a program pool's chart, staff only (tenants get 403: test_capacity_pages)",
    "capacity-plan-page": "a plan spans every organization's queue: managers only (test_capacity_planner)",
    "capacity-plan-apply": "a plan spans every organization's queue: managers only (test_capacity_planner)",
    "capacity-plan-detail": "a plan spans every organization's queue: managers only (test_capacity_planner)",
    "capacity-plan-apply-page": "a plan spans every organization's queue: managers only (test_capacity_planner)",
    "rate-card-detail": "the rate card is program-wide pricing, the same for every tenant",
    "review:week": "the weekly review is program staff's, across all orgs (tenants get 403: tests/workloads)",
    "review:meeting-save": "the weekly review is program staff's (tenants get 403: tests/workloads)",
    "review:action-item-add": "the weekly review is program staff's (tenants get 403: tests/workloads)",
    "review:action-item-status": "review action items are program staff's (tenants get 403: tests/workloads)",
    "review-meeting-detail": "review meetings are program staff's records (tenants get 403: tests/workloads)",
    "action-item-detail": "review action items are program staff's records (tenants get 403: tests/workloads)",
    "staff-two-factor-reset": "a staff account, no org's: program managers only (others get 403: test_two_factor)",
}
# Routes whose arguments are a secret from an email, not an object of any org: the secret is the credential and
# without it the link shows nothing (tests/tenants/test_password_reset.py, tests/tenants/test_members.py).
SIGNED_LINKS = {
    "password_reset_confirm": "the emailed password-reset link: an account's id and its reset token",
    "invitation": "an invitation link's key: useless once used, revoked or expired",
}
# Routes whose argument names a way to sign in (a provider of SSO_PROVIDERS, from settings), before anyone is signed
# in: the same for every tenant, and no tenant's data (tests/sso/test_saml.py).
SIGN_IN = {
    "saml-login": "starts a SAML sign-in with the provider named",
    "saml-acs": "where the provider posts its answer (verified by pysaml2)",
    "saml-metadata": "the SP metadata published for the provider named",
}
# Routes whose argument names an object of one user's own, not of an org (an API token): another user's is a
# 404, even in the same org. Each maps to a function making such an object for a user.
USER_OWNED = {
    "account-token-revoke": lambda user: create_token(user=user, name="t", expires_in_days=7, via="page")[0],
    "token-detail": lambda user: create_token(user=user, name="t", expires_in_days=7, via="api")[0],
}
# Routes of SCIM provisioning (tenants/scim/): their client is an institution's identity system with a SCIM token,
# which acts on accounts and groups across the program, never a person; a session (any tenant's, staff's) is a 401
# there, checked below for every SCIM route and in tests/scim/test_access.py.
SCIM_CLIENT = {
    "scim-resource-type": "a resource type's name: SCIM discovery, the same for every client",
    "scim-schema": "a schema's URN: SCIM discovery, the same for every client",
    "scim-user": "a provisioned person's SCIM id: the SCIM token's, no org's",
    "scim-group": "a provisioned group's SCIM id: the SCIM token's, no org's",
    "scim-collection-search": "Users or Groups: the SCIM token's search",
    "scim-not-found": "any other path under /scim/v2/: a SCIM 404 for the token's holder",
}
# Django's admin is for is_staff users only and has its own permission system.
SKIPPED_NAMESPACES = {"admin"}


@dataclass(frozen=True)
class Route:
    name: str
    kwargs: tuple[str, ...]
    callback: Callable
    methods: tuple[str, ...]


def _walk(patterns, namespace: str = "") -> Iterator[Route]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            if entry.namespace in SKIPPED_NAMESPACES:
                continue
            yield from _walk(entry.url_patterns, inner)
        elif isinstance(entry, URLPattern):
            kwargs = tuple(entry.pattern.regex.groupindex)
            if not set(kwargs) - {"format"}:  # a list route with a format suffix names no object
                continue
            assert entry.name, f"Route {entry.pattern} takes {kwargs} but has no name: name it."
            actions = getattr(entry.callback, "actions", None)  # DRF viewset routes know their methods
            methods = tuple(m.upper() for m in actions) if actions else ("GET", "POST")
            yield Route(f"{namespace}{entry.name}", kwargs, entry.callback, methods)


ROUTES = sorted(_walk(get_resolver().url_patterns), key=lambda r: (r.name, r.kwargs))


def _tenant_model(route: Route) -> type[models.Model] | None:
    view_class = getattr(route.callback, "cls", None) or getattr(route.callback, "view_class", None)
    return getattr(view_class, "model", None) or getattr(route.callback, "tenant_model", None)


# Arguments naming the parent of the route's object, read from that object so both name the same thing: a service
# account's token under its account's URL (organizations/<slug>/service-accounts/<service_account_id>/tokens/<pk>/).
PARENT_KWARGS: dict[str, Callable] = {"service_account_id": lambda token: token.user.service_account.pk}


def _object(route: Route, kwarg: str, org: Organization) -> models.Model:
    model = _tenant_model(route)
    assert model is not None, (
        f"{route.name} takes {kwarg!r}, but this test cannot tell which tenant model it names: set `model` "
        f"on the view class (or `tenant_model` on the view function), or list it in PROGRAM_WIDE."
    )
    assert model in TENANT_FACTORIES, f"Add a factory for {model.__name__} to tests.factories.TENANT_FACTORIES."
    return TENANT_FACTORIES[model](organization=org)


def route_kwargs(route: Route, org: Organization) -> dict[str, str]:
    """The arguments that name `org`'s object for this route: one object, made for it, and its parent's id."""
    made: list[models.Model] = []
    values = {}
    for kwarg in route.kwargs:
        if kwarg == "org_slug":
            values[kwarg] = org.slug
        elif kwarg == "format":
            values[kwarg] = "json"
        else:
            if not made:
                made.append(_object(route, kwarg, org))
            values[kwarg] = str(PARENT_KWARGS[kwarg](made[0]) if kwarg in PARENT_KWARGS else made[0].pk)
    return values


def _responses(client, route: Route, org: Organization, slug_org: Organization | None = None) -> dict[str, int]:
    """Statuses of every method on the route naming `org`'s object (under `slug_org`'s slug, if given)."""
    kwargs = route_kwargs(route, org)
    if slug_org is not None and "org_slug" in kwargs:
        kwargs["org_slug"] = slug_org.slug
    url = reverse(route.name, kwargs=kwargs)
    statuses = {}
    for method in route.methods:
        response = getattr(client, method.lower())(url, content_type="application/json")
        statuses[method] = response.status_code
    return statuses


TENANT_ROUTES = [
    r for r in ROUTES if r.name not in PROGRAM_WIDE and r.name not in USER_OWNED | SIGNED_LINKS | SIGN_IN | SCIM_CLIENT
]
SCIM_NAMES = sorted(entry.name for entry in scim_urls.urlpatterns)  # every SCIM route, with arguments or without
USER_ROUTES = [r for r in ROUTES if r.name in USER_OWNED]


def test_the_url_conf_has_tenant_routes_to_check():
    # Guards the walker itself: if it found nothing, every test below would pass vacuously.
    names = {r.name for r in TENANT_ROUTES}
    assert {"org-home", "organization-detail"} <= names


def test_program_wide_list_names_only_existing_routes():
    assert set(PROGRAM_WIDE) <= {r.name for r in ROUTES}
    assert set(USER_OWNED) <= {r.name for r in ROUTES}
    assert set(SIGNED_LINKS) <= {r.name for r in ROUTES}
    assert set(SIGN_IN) <= {r.name for r in ROUTES}
    assert set(SCIM_CLIENT) <= {r.name for r in ROUTES}


def _user_route_responses(client, route: Route, owner) -> dict[str, int]:
    obj = USER_OWNED[route.name](owner)
    kwargs = {k: ("json" if k == "format" else str(obj.pk)) for k in route.kwargs}
    url = reverse(route.name, kwargs=kwargs)
    return {m: getattr(client, m.lower())(url, content_type="application/json").status_code for m in route.methods}


@pytest.mark.django_db
@pytest.mark.parametrize("route", USER_ROUTES, ids=lambda r: f"{r.name}[{','.join(r.kwargs)}]")
def test_another_users_object_is_404_even_in_the_same_org(client, route):
    org = OrganizationFactory()
    me, them = MembershipFactory(organization=org).user, MembershipFactory(organization=org).user
    client.force_login(me)
    statuses = _user_route_responses(client, route, them)
    assert set(statuses.values()) <= {404, 405}, f"{route.name}: {statuses}"
    assert 404 in statuses.values(), f"{route.name}: {statuses}"
    own = _user_route_responses(client, route, me)
    assert any(status != 404 for status in own.values()), f"{route.name} on own object: {own}"


@pytest.mark.django_db
@pytest.mark.parametrize("route", USER_ROUTES, ids=lambda r: f"{r.name}[{','.join(r.kwargs)}]")
def test_anonymous_gets_no_users_object(client, route):
    statuses = _user_route_responses(client, route, MembershipFactory().user)
    assert set(statuses.values()) <= {302, 401, 403, 404, 405}, f"{route.name}: {statuses}"


@pytest.mark.django_db
@pytest.mark.parametrize("route", TENANT_ROUTES, ids=lambda r: f"{r.name}[{','.join(r.kwargs)}]")
def test_another_orgs_object_is_404(client, route):
    mine, theirs = OrganizationFactory(), OrganizationFactory()
    client.force_login(MembershipFactory(organization=mine).user)

    statuses = _responses(client, route, theirs)
    assert set(statuses.values()) <= {404, 405}, f"{route.name}: {statuses}"
    assert 404 in statuses.values(), f"{route.name}: {statuses}"

    # The same route on the member's own object is reachable: proves the URL built above was right.
    own = _responses(client, route, mine)
    assert any(status != 404 for status in own.values()), f"{route.name} on own object: {own}"


OBJECT_ROUTES_UNDER_AN_ORG = [
    r for r in TENANT_ROUTES if "org_slug" in r.kwargs and len(set(r.kwargs) - {"format"}) > 1
]


@pytest.mark.django_db
@pytest.mark.parametrize("route", OBJECT_ROUTES_UNDER_AN_ORG, ids=lambda r: f"{r.name}[{','.join(r.kwargs)}]")
def test_another_orgs_object_under_my_own_slug_is_404(client, route):
    """/orgs/mine/…/<their id>/ must not reach their object through my org's URL."""
    mine, theirs = OrganizationFactory(), OrganizationFactory()
    client.force_login(MembershipFactory(organization=mine).user)
    statuses = _responses(client, route, theirs, slug_org=mine)
    assert set(statuses.values()) <= {404, 405}, f"{route.name}: {statuses}"
    assert 404 in statuses.values(), f"{route.name}: {statuses}"


@pytest.mark.django_db
@pytest.mark.parametrize("route", TENANT_ROUTES, ids=lambda r: f"{r.name}[{','.join(r.kwargs)}]")
def test_anonymous_gets_nothing(client, route):
    statuses = _responses(client, route, OrganizationFactory())
    # Pages send anonymous users to log in; the API answers 401/403. Never any data.
    assert set(statuses.values()) <= {302, 401, 403, 404, 405}, f"{route.name}: {statuses}"


@pytest.mark.django_db
@pytest.mark.parametrize("name", SCIM_NAMES)
def test_a_session_is_no_scim_client(client, name):
    """With SCIM set up (a token exists), a signed-in person, program staff too, is refused (401) like anyone
    without the token; the routes' objects belong to the SCIM client, not to an organization."""
    from tenants.scim.tokens import issue_token
    from tests.factories import StaffRoleFactory

    issue_token(name="client")
    pattern = next(entry.pattern for entry in scim_urls.urlpatterns if entry.name == name)
    url = reverse(name, kwargs={k: "x" for k in pattern.regex.groupindex})
    for user in (None, MembershipFactory().user, StaffRoleFactory().user):
        if user is not None:
            client.force_login(user)
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
            response = client.generic(method, url, "{}", content_type="application/scim+json")
            assert response.status_code in (401, 405), f"{name} {method}: {response.status_code}"
