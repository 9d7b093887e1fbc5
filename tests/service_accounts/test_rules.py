"""Creating service accounts: who may, what names and roles, and how a refusal reads (a field message in the API
and on the page, never a 500); a service account never manages anyone; the Members page lists people only."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404
from django.urls import reverse
from rest_framework.test import APIClient

from tenants.members import services as members
from tenants.models import AuditEvent, Membership
from tenants.service_accounts import services
from tenants.service_accounts.models import ServiceAccount
from tests.factories import MembershipFactory, OrganizationFactory, StaffRoleFactory, UserFactory

pytestmark = pytest.mark.django_db


def api_as(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_an_admin_creates_a_machine_user_with_its_own_membership(org, admin, make_account):
    account = make_account(name="Nightly-Eval", role="viewer", description="Runs the evals at 02:00.")
    user = account.user
    assert user.username == "svc-sakura-nightly-eval"
    assert not user.has_usable_password() and user.is_active and user.email == ""
    membership = Membership.objects.get(user=user)
    assert (membership.organization, membership.role) == (org, "viewer")
    assert (account.name, account.role, account.created_by, account.active_tokens) == (
        "Nightly-Eval",
        "viewer",
        admin,
        0,
    )
    event = AuditEvent.objects.get(action="service_account.created")
    assert (event.actor, event.organization, event.target_id, event.comment) == (admin, org, account.pk, user.username)
    assert event.changes == {"name": [None, "Nightly-Eval"], "role": [None, "viewer"]}


@pytest.mark.parametrize(
    ("name", "role", "field", "words"),
    [
        ("nightly-eval", "member", "name", "already has"),  # the same name
        ("NIGHTLY-EVAL", "member", "name", "already has"),  # without regard to case
        ("", "member", "name", "name"),
        ("has space", "member", "name", "letters, digits and hyphens"),
        ("-dash", "member", "name", "letters, digits and hyphens"),
        ("x" * 61, "member", "name", "letters, digits and hyphens"),
        ("other", "admin", "role", "cannot be admin"),
        ("other", "owner", "role", "No such role"),
    ],
)
def test_bad_names_and_roles_are_refused_and_change_nothing(make_account, name, role, field, words):
    make_account(name="nightly-eval")
    before = (ServiceAccount.objects.count(), get_user_model().objects.count(), AuditEvent.objects.count())
    with pytest.raises(ValidationError) as refused:
        make_account(name=name, role=role)
    assert words in " ".join(refused.value.message_dict[field])
    assert (ServiceAccount.objects.count(), get_user_model().objects.count(), AuditEvent.objects.count()) == before


def test_a_name_whose_username_a_person_has_is_refused(make_account):
    UserFactory(username="SVC-Sakura-Robot")  # an older account, from before the prefix was reserved
    with pytest.raises(ValidationError) as refused:
        make_account(name="robot")
    assert "svc-sakura-robot is taken" in refused.value.message_dict["name"][0]


def test_the_same_name_in_another_organization_is_another_account(make_account):
    other = OrganizationFactory(slug="kaede")
    make_account(name="nightly")
    account = services.create_service_account(
        user=MembershipFactory(organization=other, role="admin").user, organization=other, name="nightly", role="member"
    )
    assert account.username == "svc-kaede-nightly"


def test_the_api_answers_bad_input_with_field_messages(org, admin, make_account):
    make_account(name="nightly-eval")
    url = reverse("organization-service-account-list", args=[org.slug])
    api = api_as(admin)
    for body, field, words in [
        ({"name": "Nightly-EVAL"}, "name", "already has"),
        ({"name": "other", "role": "admin"}, "role", "cannot be admin"),
        ({"name": "bad name!"}, "name", "letters, digits and hyphens"),
        ({"role": "member"}, "name", "required"),
        ({"name": "ok", "username": "svc-x"}, "username", "Unknown field"),
    ]:
        response = api.post(url, body, format="json")
        assert response.status_code == 400, (body, response.content)
        assert words in " ".join(response.json()[field]), response.json()
    assert ServiceAccount.objects.count() == 1


def test_the_api_creates_lists_changes_and_disables(org, admin):
    api = api_as(admin)
    url = reverse("organization-service-account-list", args=[org.slug])
    created = api.post(url, {"name": "trainer", "description": "CI"}, format="json")
    assert created.status_code == 201, created.json()
    body = created.json()
    assert (body["username"], body["role"], body["state"], body["created_by"]) == (
        "svc-sakura-trainer", "member", "active", admin.username,
    )  # fmt: skip
    detail = reverse("organization-service-account-detail", args=[org.slug, body["id"]])
    assert api.get(url).json()["count"] == 1
    changed = api.patch(detail, {"role": "viewer", "description": "read-only CI"}, format="json")
    assert (changed.status_code, changed.json()["role"], changed.json()["description"]) == (
        200,
        "viewer",
        "read-only CI",
    )
    assert api.patch(detail, {"role": "admin"}, format="json").status_code == 400
    assert Membership.objects.get(user__username="svc-sakura-trainer").role == "viewer"
    event = AuditEvent.objects.get(action="service_account.changed")
    assert event.changes == {"role": ["member", "viewer"], "description": ["CI", "read-only CI"]}
    disabled = api.post(reverse("organization-service-account-disable", args=[org.slug, body["id"]]))
    assert (disabled.status_code, disabled.json()["state"], disabled.json()["disabled_by"]) == (
        200, "disabled", admin.username,
    )  # fmt: skip
    enabled = api.post(reverse("organization-service-account-enable", args=[org.slug, body["id"]]))
    assert (enabled.status_code, enabled.json()["state"]) == (200, "active")
    assert [e.action for e in AuditEvent.objects.order_by("pk")] == [
        "service_account.created", "service_account.changed", "service_account.disabled", "service_account.enabled",
    ]  # fmt: skip


@pytest.mark.parametrize("role", ["member", "viewer"])
def test_members_and_viewers_read_the_accounts_but_cannot_manage_them(org, make_account, role):
    account = make_account()
    me = MembershipFactory(organization=org, role=role).user
    api = api_as(me)
    listed = api.get(reverse("organization-service-account-list", args=[org.slug]))
    assert listed.status_code == 200 and listed.json()["results"][0]["username"] == account.username
    writes = [
        api.post(reverse("organization-service-account-list", args=[org.slug]), {"name": "mine"}, format="json"),
        api.patch(
            reverse("organization-service-account-detail", args=[org.slug, account.pk]),
            {"role": "viewer"},
            format="json",
        ),
        api.post(reverse("organization-service-account-disable", args=[org.slug, account.pk])),
        api.post(
            reverse("organization-service-account-token-list", args=[org.slug, account.pk]),
            {"name": "t"},
            format="json",
        ),
    ]
    assert [w.status_code for w in writes] == [403] * 4
    with pytest.raises(PermissionDenied):
        services.create_service_account(user=me, organization=org, name="mine", role="member")
    assert ServiceAccount.objects.count() == 1 and not account.user.api_tokens.exists()
    assert Membership.objects.get(user=account.user).role == "member"


def test_another_organizations_admin_gets_404(org, make_account):
    account = make_account()
    stranger = MembershipFactory(organization=OrganizationFactory(), role="admin").user
    api = api_as(stranger)
    assert api.get(reverse("organization-service-account-list", args=[org.slug])).status_code == 404
    assert api.get(reverse("organization-service-account-detail", args=[org.slug, account.pk])).status_code == 404
    assert api.post(reverse("organization-service-account-disable", args=[org.slug, account.pk])).status_code == 404
    tokens = reverse("organization-service-account-token-list", args=[org.slug, account.pk])
    assert api.post(tokens, {"name": "t"}, format="json").status_code == 404
    with pytest.raises(Http404):
        services.create_service_account(user=stranger, organization=org, name="x", role="member")
    account.refresh_from_db()
    assert account.disabled_at is None


@pytest.mark.parametrize("staff_role", ["program_manager", "support_engineer"])
def test_program_staff_manage_any_organizations_accounts(org, staff_role):
    staff = StaffRoleFactory(role=staff_role).user
    api = api_as(staff)
    response = api.post(reverse("organization-service-account-list", args=[org.slug]), {"name": "ops"}, format="json")
    assert response.status_code == 201
    assert ServiceAccount.objects.get().created_by == staff


def test_a_service_account_manages_neither_members_nor_service_accounts(org, admin, make_account, key_for):
    account = make_account(role="member")
    api = key_for(account)
    assert (
        api.post(
            reverse("organization-service-account-list", args=[org.slug]), {"name": "child"}, format="json"
        ).status_code
        == 403
    )
    assert (
        api.post(
            reverse("organization-invitation-list", args=[org.slug]),
            {"email": "x@example.org", "role": "admin"},
            format="json",
        ).status_code
        == 403
    )
    admin_membership = Membership.objects.get(user=admin)
    assert api.delete(reverse("organization-member-detail", args=[org.slug, admin_membership.pk])).status_code == 403
    # Even an admin membership given behind the services' back (Django admin) manages nothing.
    Membership.objects.filter(user=account.user).update(role="admin")
    with pytest.raises(PermissionDenied):
        services.create_service_account(user=account.user, organization=org, name="child", role="member")
    with pytest.raises(PermissionDenied):
        members.invite(user=account.user, organization=org, email="x@example.org", role="admin")
    assert ServiceAccount.objects.count() == 1


def test_the_members_page_and_api_list_people_and_refuse_to_touch_a_machines_membership(
    client, org, admin, make_account
):
    account = make_account()
    membership = Membership.objects.get(user=account.user)
    client.force_login(admin)
    page = client.get(reverse("members:list", args=[org.slug]))
    assert account.username not in page.content.decode()
    assert reverse("service_accounts:list", args=[org.slug]) in page.content.decode()
    api = api_as(admin)
    assert [m["username"] for m in api.get(reverse("organization-member-list", args=[org.slug])).json()["results"]] == [
        admin.username
    ]
    detail = reverse("organization-member-detail", args=[org.slug, membership.pk])
    assert api.patch(detail, {"role": "admin"}, format="json").status_code == 404
    assert api.delete(detail).status_code == 404
    with pytest.raises(ValidationError, match="service account"):
        members.change_role(user=admin, membership=membership, role="admin")
    with pytest.raises(ValidationError, match="service account"):
        members.remove_member(user=admin, membership=membership)
    assert Membership.objects.get(pk=membership.pk).role == "member"
