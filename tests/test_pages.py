"""portal.pages: what every htmx page shares — fragment or whole page, and a response that varies on HX-Request."""

import pytest

from portal.pages import id_param

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


@pytest.mark.parametrize("value", ["abc", "²", "-1", "1.5", "", "9223372036854775808", "9" * 40])
def test_id_param_takes_only_ids_the_database_can_hold(value):
    assert id_param(value) is None


def test_id_param_reads_an_id():
    assert id_param("42") == 42 and id_param(2**63 - 1) == 2**63 - 1


BAD_IDS = ["abc", "²", "9223372036854775808"]


@pytest.mark.parametrize("value", BAD_IDS)
def test_a_bad_id_in_a_page_parameter_is_never_a_500(client, manager, org, member, value):
    """Query-string and form ids on pages (pre-fills, the rate card's remove button) answer like a missing id."""
    client.raise_request_exception = False
    client.force_login(manager)
    removed = client.post("/program/usage/rates/", {"remove": value})
    assert removed.status_code == 404
    client.force_login(member)
    for url in (
        f"/orgs/{org.slug}/capacity/new/?allocation={value}",
        f"/orgs/{org.slug}/clusters/new/?allocation={value}&workload={value}",
        f"/orgs/{org.slug}/support/new/?workload={value}",
    ):
        assert client.get(url).status_code in (200, 404), url
