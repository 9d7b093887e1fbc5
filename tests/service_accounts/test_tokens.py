"""A service account's tokens: they act with exactly the account's role in its one organization, stop at once when
revoked or when the account is disabled (and do not come back when it is enabled), outlive the person who made
them, and never come from a password."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from tenants.members import services as members
from tenants.models import AuditEvent, CapacityRequest, Membership
from tenants.service_accounts import services
from tenants.tokens.models import ApiToken
from tenants.tokens.services import MAX_DAYS
from tests.factories import PASSWORD, MembershipFactory, OrganizationFactory, WorkloadFactory

pytestmark = pytest.mark.django_db

REQUEST = {
    "instance_type": "p5.48xlarge",
    "region": "us-east-1",
    "instance_count": 8,
    "starts_on": "2027-01-01",
    "ends_on": "2027-02-28",
    "justification": "Nightly continued pre-training.",
}


def api_as(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.mark.usefixtures("before_the_program", "pool")
def test_a_member_accounts_token_submits_a_capacity_request_for_its_org(org, make_account, key_for):
    account = make_account(role="member")
    api = key_for(account)
    response = api.post(reverse("capacity-request-list"), {**REQUEST, "submit": True}, format="json")
    assert response.status_code == 201, response.json()
    request = CapacityRequest.objects.get()
    assert (request.organization, request.created_by, request.status) == (org, account.user, "submitted")
    token = ApiToken.objects.get(user=account.user)
    assert token.last_used_at is not None


@pytest.mark.usefixtures("before_the_program", "pool")
def test_a_viewer_accounts_token_reads_and_cannot_write(org, make_account, key_for):
    workload = WorkloadFactory(organization=org)
    api = key_for(make_account(role="viewer"))
    assert api.get(reverse("workload-detail", args=[workload.pk])).status_code == 200
    response = api.post(reverse("capacity-request-list"), {**REQUEST, "organization": org.slug}, format="json")
    assert response.status_code == 403
    assert "viewer" in response.json()["detail"]
    assert not CapacityRequest.objects.exists()


@pytest.mark.usefixtures("before_the_program", "pool")
def test_a_role_change_holds_from_the_next_request(org, admin, make_account, key_for):
    account = make_account(role="viewer")
    api = key_for(account)
    assert api.post(reverse("capacity-request-list"), REQUEST, format="json").status_code == 403
    services.change_service_account(user=admin, account=account, role="member")
    assert api.post(reverse("capacity-request-list"), REQUEST, format="json").status_code == 201


def test_the_token_reaches_nothing_of_another_organization(org, make_account, key_for):
    other = OrganizationFactory()
    theirs = WorkloadFactory(organization=other)
    api = key_for(make_account())
    assert api.get(reverse("organization-detail", args=[org.slug])).status_code == 200
    assert api.get(reverse("organization-detail", args=[other.slug])).status_code == 404
    assert api.get(reverse("workload-detail", args=[theirs.pk])).status_code == 404
    assert api.get(reverse("organization-member-list", args=[other.slug])).status_code == 404
    assert [o["slug"] for o in api.get(reverse("organization-list")).json()["results"]] == [org.slug]


def test_disabling_revokes_every_token_at_once_and_enabling_does_not_revive_them(org, admin, make_account, key_for):
    account = make_account()
    first, second = key_for(account), key_for(account)
    org_url = reverse("organization-detail", args=[org.slug])
    assert first.get(org_url).status_code == 200 and second.get(org_url).status_code == 200

    services.disable_service_account(user=admin, account=account)

    for api in (first, second):
        response = api.get(org_url)
        assert response.status_code == 401
        assert "revoked" in response.json()["detail"]
    assert set(ApiToken.objects.filter(user=account.user).values_list("revoked_by", flat=True)) == {admin.pk}
    account.user.refresh_from_db()
    assert not account.user.is_active
    with pytest.raises(ValidationError, match="disabled") as refused:
        key_for(account)  # a disabled account gets no token
    assert refused.value.code == "disabled"
    event = AuditEvent.objects.get(action="service_account.disabled")
    assert event.changes["tokens_revoked"] == [0, 2]

    services.enable_service_account(user=admin, account=account)
    assert first.get(org_url).status_code == 401 and second.get(org_url).status_code == 401
    assert key_for(account).get(org_url).status_code == 200
    assert ApiToken.objects.filter(user=account.user, revoked_at__isnull=True).count() == 1


def test_revoking_one_token_stops_it_and_leaves_the_others(org, admin, make_account):
    account = make_account()
    api = api_as(admin)
    tokens_url = reverse("organization-service-account-token-list", args=[org.slug, account.pk])
    created = api.post(tokens_url, {"name": "nightly", "expires_in_days": 7}, format="json")
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["token"].startswith(body["prefix"]) and body["created_by"] == admin.username
    assert body["created_via"] == "svc-api"
    assert (
        timedelta(days=6, hours=23)
        < (ApiToken.objects.get(pk=body["id"]).expires_at - timezone.now())
        <= timedelta(days=7)
    )
    other = api.post(tokens_url, {"name": "weekly"}, format="json").json()
    listed = api.get(tokens_url).json()
    assert {t["name"] for t in listed["results"]} == {"nightly", "weekly"}
    assert all("token" not in t for t in listed["results"])  # the key is shown once only

    nightly = APIClient(HTTP_AUTHORIZATION=f"Token {body['token']}")
    weekly = APIClient(HTTP_AUTHORIZATION=f"Token {other['token']}")
    detail = reverse("organization-service-account-token-detail", args=[org.slug, account.pk, body["id"]])
    assert api.delete(detail).status_code == 204
    assert api.delete(detail).status_code == 204  # twice: the first record stays
    org_url = reverse("organization-detail", args=[org.slug])
    assert nightly.get(org_url).status_code == 401 and weekly.get(org_url).status_code == 200
    assert api.get(detail).json()["state"] == "revoked"
    assert [e.action for e in AuditEvent.objects.order_by("pk")] == [
        "service_account.created",
        "service_account.token_created",
        "service_account.token_created",
        "service_account.token_revoked",
    ]


def test_token_expiry_follows_the_token_rules(org, admin, make_account):
    account = make_account()
    api = api_as(admin)
    tokens_url = reverse("organization-service-account-token-list", args=[org.slug, account.pk])
    for days in (0, MAX_DAYS + 1):
        response = api.post(tokens_url, {"name": "t", "expires_in_days": days}, format="json")
        assert response.status_code == 400 and "expires_in_days" in response.json()
    _token, key = services.create_token(user=admin, account=account, name="short", expires_in_days=1, via="svc-api")
    client = APIClient(HTTP_AUTHORIZATION=f"Token {key}")
    with time_machine.travel(timezone.now() + timedelta(days=1, minutes=1)):
        assert client.get(reverse("organization-detail", args=[org.slug])).status_code == 401


def test_a_token_of_another_account_is_404_under_this_one(org, admin, make_account):
    one, two = make_account(name="one"), make_account(name="two")
    token, _key = services.create_token(user=admin, account=two, name="t", expires_in_days=7, via="svc-api")
    api = api_as(admin)
    assert (
        api.delete(reverse("organization-service-account-token-detail", args=[org.slug, one.pk, token.pk])).status_code
        == 404
    )
    token.refresh_from_db()
    assert token.revoked_at is None


def test_the_accounts_tokens_outlive_the_person_who_made_them(org, admin, make_account, key_for):
    creator = MembershipFactory(organization=org, role=Membership.Role.ADMIN)
    account = services.create_service_account(user=creator.user, organization=org, name="ci", role="member")
    _token, key = services.create_token(
        user=creator.user, account=account, name="ci", expires_in_days=30, via="svc-api"
    )
    members.remove_member(user=admin, membership=creator)
    api = APIClient(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get(reverse("organization-detail", args=[org.slug])).status_code == 200
    account.refresh_from_db()
    assert account.created_by == creator.user and account.disabled_at is None


def test_a_service_account_never_signs_in_with_a_password(client, org, make_account):
    account = make_account()
    # Even with a password set behind the services' back (Django admin), neither the page nor the token endpoint.
    account.user.set_password(PASSWORD)
    account.user.save()
    response = client.post(reverse("login"), {"username": account.username, "password": PASSWORD})
    assert response.status_code == 200 and "_auth_user_id" not in client.session
    answer = APIClient().post(reverse("api-token"), {"username": account.username, "password": PASSWORD}, format="json")
    assert answer.status_code == 400
    assert not ApiToken.objects.filter(user=account.user).exists()


def test_people_cannot_take_a_service_account_username(client, org, admin, settings):
    from tenants.members.forms import AccountForm
    from tenants.sso.services import _free_username

    form = AccountForm(
        {"username": "svc-sakura-x", "password1": "a long pass phrase 9", "password2": "a long pass phrase 9"},
        email="x@example.org",
    )
    assert not form.is_valid() and "service accounts" in form.errors["username"][0]
    assert not _free_username({"iss": "i", "sub": "s", "preferred_username": "SVC-sakura-x"}).lower().startswith("svc-")
