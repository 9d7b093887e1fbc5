"""portal.pages: what every htmx page shares — fragment or whole page, and a response that varies on HX-Request."""

import pytest

pytestmark = pytest.mark.django_db

# One page of each app that answers htmx with a fragment (the rest go through the same helper: test_layout).
FRAGMENT_PAGES = ["/support/", "/workloads/", "/clusters/", "/program/capacity/allocations/"]


@pytest.mark.parametrize("url", FRAGMENT_PAGES)
def test_htmx_gets_a_fragment_and_the_response_varies_on_it(manager_client, url):
    page = manager_client.get(url)
    fragment = manager_client.get(url, headers={"HX-Request": "true"})

    assert page.status_code == fragment.status_code == 200
    assert "<html" in page.text and "<html" not in fragment.text
    for response in (page, fragment):
        assert "HX-Request" in response["Vary"]  # a cache never serves one for the other


@pytest.mark.parametrize("url", FRAGMENT_PAGES)
def test_a_history_restore_gets_the_whole_page(manager_client, url):
    """htmx re-requests a pushed URL it no longer has in its history cache (Back): it needs the whole page."""
    response = manager_client.get(url, headers={"HX-Request": "true", "HX-History-Restore-Request": "true"})
    assert "<html" in response.text
