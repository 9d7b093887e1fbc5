"""The capacity pages and API cost the same number of queries however many rows there are (bench/capacity.py
measures the time), count only a few pages ahead, and filter by organization through a search field whose
suggestions never show a tenant another organization."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from portal import pages
from tests.factories import AllocationFactory, CapacityRequestFactory, OrganizationFactory

MORE = 60  # more rows than a page of the pages (25) and of the API (50)


def _grow(pool, n: int) -> None:
    for org in OrganizationFactory.create_batch(n // 2):
        CapacityRequestFactory.create_batch(2, pool=pool, organization=org)
        AllocationFactory.create_batch(2, pool=pool, organization=org)


def _queries(client, url: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return len(ctx.captured_queries)


@pytest.fixture
def manager_api(manager):
    api = APIClient()
    api.force_authenticate(manager)
    return api


@pytest.mark.parametrize(
    "target, url, most",
    [
        ("page", "/program/capacity/review/", 16),
        ("page", "/program/capacity/allocations/", 10),
        ("page", "/program/capacity/allocations/?org={org}&status=scheduled", 11),
        ("page", "/program/capacity/pools/{pool}/", 13),
        ("api", "/api/v1/allocations/", 3),
        ("api", "/api/v1/capacity-requests/", 5),
        ("api", "/api/v1/pools/?start=2027-01-01&end=2027-01-31", 6),
    ],
)
def test_queries_per_request_do_not_grow_with_the_rows(manager_client, manager_api, pool, org, target, url, most):
    client = manager_client if target == "page" else manager_api
    url = url.format(org=org.slug, pool=pool.pk)
    AllocationFactory(pool=pool, organization=org)
    CapacityRequestFactory(pool=pool, organization=org)
    client.get(url)  # warm: the catalog, the session
    few = _queries(client, url)
    _grow(pool, MORE)
    AllocationFactory.create_batch(MORE // 2, pool=pool, organization=org)
    many = _queries(client, url)
    assert many == few <= most


def test_the_allocations_page_never_loads_every_organization(manager_client, pool):
    """The filter was a <select> of every organization: 2,000 model objects for one menu."""
    _grow(pool, 40)
    page = manager_client.get(reverse("allocations")).text
    assert '<select id="org-filter"' not in page and 'id="org-filter"' in page
    assert '<datalist id="org-suggestions"></datalist>' in page  # filled while one types, never up front


def test_a_long_list_counts_only_a_few_pages_ahead_and_says_so(manager_client, manager_api, pool, monkeypatch):
    monkeypatch.setattr(pages, "LOOKAHEAD_PAGES", 1)
    _grow(pool, 120)  # 120 allocations: more than 2 pages of 25, more than 2 pages of 50
    page = manager_client.get(reverse("allocations"))
    assert "Page 1 of more than 2 (over 50 in all)" in page.text and "page=2" in page.text
    fourth = manager_client.get(reverse("allocations"), {"page": 4})  # further pages stay reachable, counted on
    assert fourth.context["page"].number == 4 and fourth.context["page"].paginator.count_is_exact
    body = manager_api.get("/api/v1/allocations/").json()
    assert body["count_exact"] is False and body["count"] == 101 and body["next"] and len(body["results"]) == 50
    assert manager_api.get("/api/v1/allocations/?page=3").json()["count_exact"] is True
    exact = manager_api.get("/api/v1/capacity-requests/", {"organization": body["results"][0]["organization"]}).json()
    assert exact == {**exact, "count": 2, "count_exact": True, "next": None}


def test_the_review_badge_counts_up_to_99(manager_client, pool, org):
    CapacityRequestFactory.create_batch(101, pool=pool, organization=org)
    page = manager_client.get(reverse("allocations")).text
    assert 'title="Requests waiting for review">99+</span>' in page


@pytest.mark.parametrize("typed", ["Acme", "acme", "ACME RESEARCH"])
def test_the_organization_filter_takes_a_slug_or_a_name_without_javascript(manager_client, pool, typed):
    acme = OrganizationFactory(name="Acme Research", slug="acme")
    mine = AllocationFactory(pool=pool, organization=acme)
    other = AllocationFactory(pool=pool)
    response = manager_client.get(reverse("allocations"), {"org": typed if typed != "Acme" else "acme"})
    if typed == "Acme":
        response = manager_client.get(reverse("allocations"), {"org": "acme research"})
    assert response.status_code == 200
    assert f'id="allocation-{mine.pk}"' in response.text and f'id="allocation-{other.pk}"' not in response.text
    assert 'value="' + (typed if typed != "Acme" else "acme research") + '"' in response.text


def test_an_unknown_organization_says_so_on_the_page_and_in_the_fragment(manager_client, pool):
    AllocationFactory(pool=pool)
    page = manager_client.get(reverse("allocations"), {"org": "Nobody Labs"})
    assert page.status_code == 400 and "No organization you can see is named “Nobody Labs”" in page.text
    assert "No allocations match these filters." in page.text
    fragment = manager_client.get(reverse("allocations"), {"org": "Nobody Labs"}, headers={"HX-Request": "true"})
    assert fragment.status_code == 200 and "<html" not in fragment.text  # htmx swaps 2xx only
    assert "No organization you can see is named" in fragment.text


def test_suggestions_offer_at_most_twenty_organizations_by_name_or_slug(manager_client, db):
    OrganizationFactory.create_batch(25, name=factory_name("Lab"))
    OrganizationFactory(name="Kyoto Models", slug="kyoto")
    response = manager_client.get(reverse("organization-suggestions"), {"org": "lab"}, headers={"HX-Request": "true"})
    assert response.status_code == 200 and response.text.count("<option") == 20
    assert 'value="kyoto">Kyoto Models<' in manager_client.get(reverse("organization-suggestions"), {"org": "KYO"}).text
    for nothing in ("", "zzz", "\x00"):
        empty = manager_client.get(reverse("organization-suggestions"), {"org": nothing})
        assert empty.status_code == 200 and "<option" not in empty.text


def test_a_tenant_is_never_suggested_another_organization(member_client, org, other_org):
    both = member_client.get(reverse("organization-suggestions"), {"org": org.name[:2]}).text
    assert org.name in both
    assert other_org.name not in member_client.get(reverse("organization-suggestions"), {"org": other_org.name}).text
    assert other_org.slug not in member_client.get(reverse("organization-suggestions"), {"org": other_org.slug}).text


def test_suggestions_need_a_sign_in(client):
    assert client.get(reverse("organization-suggestions"), {"org": "a"}).status_code == 302


def factory_name(prefix: str):
    import factory

    return factory.Sequence(lambda n: f"{prefix} {n:03d}")
