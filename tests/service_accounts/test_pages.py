"""The Service accounts pages, with the Django test client: the list (empty, then with accounts), creating one
(errors in the page), the detail with its tokens (the key shown once, revoking), disabling and enabling through a
confirmation page; members read, other organizations get a 404."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tenants.models import AuditEvent
from tenants.service_accounts.models import ServiceAccount
from tenants.tokens.models import ApiToken
from tests.factories import MembershipFactory, OrganizationFactory

pytestmark = pytest.mark.django_db
KEY = re.compile(r'value="(fmp_[\w-]+)"')


def test_an_admin_creates_an_account_and_a_token_and_sees_the_key_once(client, org, admin):
    client.force_login(admin)
    listing = client.get(reverse("service_accounts:list", args=[org.slug]))
    assert listing.status_code == 200
    assert "no service accounts yet" in listing.content.decode()
    assert (
        reverse("service_accounts:list", args=[org.slug])
        in client.get(reverse("members:list", args=[org.slug])).content.decode()
    )

    response = client.post(
        reverse("service_accounts:create", args=[org.slug]), {"name": "nightly", "role": "member", "description": ""}
    )
    account = ServiceAccount.objects.get()
    assert response.status_code == 302 and response.url == reverse(
        "service_accounts:detail", args=[org.slug, account.pk]
    )
    detail = client.get(response.url)
    assert "svc-sakura-nightly" in detail.content.decode()

    created = client.post(
        reverse("service_accounts:token-create", args=[org.slug, account.pk]), {"name": "cron", "expires_in_days": 30}
    )
    assert created.status_code == 200
    key = KEY.search(created.content.decode()).group(1)
    assert "no-store" in created["Cache-Control"]
    token = ApiToken.objects.get(user=account.user)
    assert (token.name, token.created_by, token.created_via) == ("cron", admin, "svc-page")
    again = client.get(reverse("service_accounts:detail", args=[org.slug, account.pk])).content.decode()
    assert key not in again and token.prefix in again

    listing = client.get(reverse("service_accounts:list", args=[org.slug])).content.decode()
    row = re.search(rf'<tr id="service-account-{account.pk}">.*?</tr>', listing, re.S).group(0)
    assert "nightly" in row and admin.username in row and ">1<" in row


def test_form_errors_show_in_the_page(client, org, admin):
    client.force_login(admin)
    url = reverse("service_accounts:create", args=[org.slug])
    client.post(url, {"name": "nightly", "role": "member"})
    for data, words in [
        ({"name": "NIGHTLY", "role": "member"}, "already has a service account named"),
        ({"name": "other", "role": "admin"}, "cannot be admin"),
        ({"name": "no spaces", "role": "member"}, "letters, digits and hyphens"),
        ({"name": "", "role": "member"}, "required"),
    ]:
        response = client.post(url, data)
        assert response.status_code == 400, data
        assert words in response.content.decode(), data
    account = ServiceAccount.objects.get()
    bad_token = client.post(
        reverse("service_accounts:token-create", args=[org.slug, account.pk]), {"name": "", "expires_in_days": 9999}
    )
    assert bad_token.status_code == 400 and not ApiToken.objects.exists()
    bad_role = client.post(reverse("service_accounts:change", args=[org.slug, account.pk]), {"role": "admin"})
    assert bad_role.status_code == 400 and "cannot be admin" in bad_role.content.decode()


def test_disable_and_enable_go_through_a_page_saying_what_happens(client, org, admin, make_account, key_for):
    account = make_account()
    key_for(account)
    client.force_login(admin)
    confirm = client.get(reverse("service_accounts:disable", args=[org.slug, account.pk]))
    assert confirm.status_code == 200
    assert "1 active token is revoked at once" in confirm.content.decode()
    assert not ServiceAccount.objects.get().is_disabled  # a GET changes nothing
    done = client.post(reverse("service_accounts:disable", args=[org.slug, account.pk]))
    assert done.status_code == 302
    assert ServiceAccount.objects.get().is_disabled
    assert not ApiToken.objects.filter(revoked_at__isnull=True).exists()
    page = client.get(done.url).content.decode()
    assert "Enable…" in page and "Create a token" not in page
    enable_page = client.get(reverse("service_accounts:enable", args=[org.slug, account.pk])).content.decode()
    assert "stay revoked" in enable_page
    client.post(reverse("service_accounts:enable", args=[org.slug, account.pk]))
    assert not ServiceAccount.objects.get().is_disabled
    assert not ApiToken.objects.filter(revoked_at__isnull=True).exists()
    assert AuditEvent.objects.filter(action__startswith="service_account.").count() == 4


def test_revoking_a_token_on_the_page(client, org, admin, make_account):
    from tenants.service_accounts import services

    account = make_account()
    token, _key = services.create_token(user=admin, account=account, name="cron", expires_in_days=7, via="svc-page")
    client.force_login(admin)
    url = reverse("service_accounts:token-revoke", args=[org.slug, account.pk])
    assert client.post(url, {"token": "nope"}).status_code == 404
    response = client.post(url, {"token": token.pk})
    assert response.status_code == 302
    token.refresh_from_db()
    assert token.revoked_by == admin


@pytest.mark.parametrize("role", ["member", "viewer"])
def test_members_and_viewers_read_the_pages_without_the_controls(client, org, make_account, role):
    account = make_account()
    client.force_login(MembershipFactory(organization=org, role=role).user)
    listing = client.get(reverse("service_accounts:list", args=[org.slug])).content.decode()
    assert account.username in listing and reverse("service_accounts:create", args=[org.slug]) not in listing
    detail = client.get(reverse("service_accounts:detail", args=[org.slug, account.pk]))
    assert detail.status_code == 200 and "Disable…" not in detail.content.decode()
    assert (
        client.post(reverse("service_accounts:create", args=[org.slug]), {"name": "x", "role": "member"}).status_code
        == 403
    )
    assert client.get(reverse("service_accounts:disable", args=[org.slug, account.pk])).status_code == 403
    assert (
        client.post(
            reverse("service_accounts:token-create", args=[org.slug, account.pk]), {"name": "t", "expires_in_days": 7}
        ).status_code
        == 403
    )
    assert ServiceAccount.objects.count() == 1 and not ApiToken.objects.exists()


def test_another_organizations_accounts_are_404_and_staff_see_all(client, org, make_account, manager_client):
    account = make_account()
    client.force_login(MembershipFactory(organization=OrganizationFactory(), role="admin").user)
    assert client.get(reverse("service_accounts:list", args=[org.slug])).status_code == 404
    assert client.get(reverse("service_accounts:detail", args=[org.slug, account.pk])).status_code == 404
    assert client.post(reverse("service_accounts:disable", args=[org.slug, account.pk])).status_code == 404
    staff_page = manager_client.get(reverse("service_accounts:detail", args=[org.slug, account.pk]))
    assert staff_page.status_code == 200 and "Disable…" in staff_page.content.decode()


def test_the_org_navigation_links_the_page(client, org, admin):
    client.force_login(admin)
    page = client.get(reverse("org-home", args=[org.slug])).content.decode()
    assert reverse("service_accounts:list", args=[org.slug]) in page
