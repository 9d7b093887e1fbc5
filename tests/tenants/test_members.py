"""An organization's members, managed by its admins: invitations by single-use expiring link, role changes, removal
(access ends on the next request, tokens revoked, records kept), the last admin kept, everything audited; program
staff do the same for any organization; another organization's members are invisible."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
import time_machine
from django.core import mail
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from tenants.members import services
from tenants.members.models import Invitation
from tenants.models import AuditEvent, Membership
from tenants.tokens.services import create_token
from tests.factories import (
    CapacityRequestFactory,
    MembershipFactory,
    OrganizationFactory,
    StaffRoleFactory,
    UserFactory,
    WorkloadFactory,
)

pytestmark = pytest.mark.django_db
LINK = re.compile(r"https?://\S+/invitations/(inv_[\w-]+)/")


@pytest.fixture
def org():
    return OrganizationFactory(name="Sakura Lab", language="en")


@pytest.fixture
def admin(org):
    return MembershipFactory(organization=org, role=Membership.Role.ADMIN).user


def invite_link(django_capture_on_commit_callbacks, **kwargs) -> str:
    with django_capture_on_commit_callbacks(execute=True):
        services.invite(**kwargs)
    return LINK.search(mail.outbox[-1].body).group(1)


# --- Invitations ---------------------------------------------------------------------------------------------------


def test_an_admin_invites_by_email_and_the_invitee_joins_with_the_role(
    client, org, admin, django_capture_on_commit_callbacks
):
    client.force_login(admin)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("members:invite", args=[org.slug]), {"email": "Hana@Example.ORG", "role": "viewer"}
        )
    assert response.status_code == 302
    assert mail.outbox[-1].to == ["Hana@example.org"]
    assert "Sakura Lab" in mail.outbox[-1].subject
    key = LINK.search(mail.outbox[-1].body).group(1)
    invitation = Invitation.objects.get()
    assert invitation.digest != key and key not in str(Invitation.objects.values().get())  # stored hashed only
    assert invitation.expires_at - invitation.created_at == timedelta(days=7)

    hana = UserFactory(email="hana@example.org")
    client.force_login(hana)
    page = client.get(reverse("invitation", args=[key]))
    assert page.status_code == 200 and "Sakura Lab" in page.content.decode()
    assert client.post(reverse("invitation", args=[key])).url == reverse("org-home", args=[org.slug])
    assert Membership.objects.get(user=hana, organization=org).role == Membership.Role.VIEWER
    assert list(AuditEvent.objects.filter(organization=org).values_list("action", flat=True)) == [
        "member.joined",
        "member.invited",
    ]


def test_a_used_link_is_useless_even_to_its_addressee(client, org, admin, django_capture_on_commit_callbacks):
    key = invite_link(
        django_capture_on_commit_callbacks, user=admin, organization=org, email="a@example.org", role="member"
    )
    person = UserFactory(email="a@example.org")
    client.force_login(person)
    client.post(reverse("invitation", args=[key]))
    Membership.objects.filter(user=person).update(role=Membership.Role.VIEWER)
    again = client.post(reverse("invitation", args=[key]))
    assert again.status_code == 410
    assert "only once" in again.content.decode()
    assert Membership.objects.get(user=person).role == Membership.Role.VIEWER  # nothing changed


def test_an_expired_or_revoked_or_made_up_link_is_useless(client, org, admin, django_capture_on_commit_callbacks):
    person = UserFactory(email="b@example.org")
    client.force_login(person)
    key = invite_link(
        django_capture_on_commit_callbacks, user=admin, organization=org, email="b@example.org", role="member"
    )
    with time_machine.travel(timezone.now() + timedelta(days=7, minutes=1)):
        response = client.post(reverse("invitation", args=[key]))
    assert response.status_code == 410 and "expired" in response.content.decode()

    Invitation.objects.all().delete()
    key = invite_link(
        django_capture_on_commit_callbacks, user=admin, organization=org, email="b@example.org", role="member"
    )
    services.revoke_invitation(user=admin, invitation=Invitation.objects.get())
    response = client.post(reverse("invitation", args=[key]))
    assert response.status_code == 410 and "revoked" in response.content.decode()

    assert client.get(reverse("invitation", args=["inv_" + "x" * 43])).status_code == 404
    assert not Membership.objects.filter(user=person).exists()


def test_the_link_is_for_its_addressee_only(client, org, admin, django_capture_on_commit_callbacks):
    key = invite_link(
        django_capture_on_commit_callbacks, user=admin, organization=org, email="c@example.org", role="admin"
    )
    intruder = UserFactory(email="someone-else@example.org")
    client.force_login(intruder)
    assert client.post(reverse("invitation", args=[key])).status_code == 403
    assert not Membership.objects.filter(user=intruder).exists()
    assert Invitation.objects.get().state == "active"  # still usable by its addressee


def test_a_new_person_creates_a_local_account_and_joins(
    client, org, admin, django_capture_on_commit_callbacks, settings
):
    key = invite_link(
        django_capture_on_commit_callbacks, user=admin, organization=org, email="new@example.org", role="member"
    )
    url = reverse("invitation", args=[key])
    weak = client.post(url, {"username": "newbie", "password1": "123", "password2": "123"})
    assert weak.status_code == 400 and not Membership.objects.filter(user__username="newbie").exists()
    password = "a-long-Passphrase-42"
    bad_name = client.post(url, {"username": "bad name!", "password1": password, "password2": password})
    assert bad_name.status_code == 400 and not Membership.objects.filter(organization=org, role="member").exists()
    response = client.post(url, {"username": "newbie", "password1": password, "password2": password})
    assert response.url == reverse("org-home", args=[org.slug])
    membership = Membership.objects.get(user__username="newbie")
    assert (membership.organization, membership.role, membership.user.email) == (org, "member", "new@example.org")
    assert client.get(reverse("org-home", args=[org.slug])).status_code == 200  # signed in

    settings.LOCAL_PASSWORD_LOGIN = False
    client.logout()
    key = invite_link(
        django_capture_on_commit_callbacks, user=admin, organization=org, email="sso@example.org", role="member"
    )
    page = client.get(reverse("invitation", args=[key]))
    assert 'name="password1"' not in page.content.decode()
    assert (
        client.post(
            reverse("invitation", args=[key]), {"username": "x", "password1": password, "password2": password}
        ).status_code
        == 400
    )
    assert not Membership.objects.filter(user__username="x").exists()


@pytest.mark.parametrize(
    ("email", "role", "field"),
    [("not an address", "member", "email"), ("ok@example.org", "owner", "role"), ("", "", "email")],
)
def test_bad_invitations_are_refused_and_change_nothing(org, admin, email, role, field):
    with pytest.raises(ValidationError) as refused:
        services.invite(user=admin, organization=org, email=email, role=role)
    assert field in refused.value.message_dict
    assert not Invitation.objects.exists() and not AuditEvent.objects.exists() and not mail.outbox


def test_the_api_answers_bad_invitations_with_field_errors(org, admin):
    api = APIClient()
    api.force_authenticate(admin)
    url = reverse("organization-invitation-list", args=[org.slug])
    response = api.post(url, {"email": "nope", "role": "owner"}, format="json")
    assert response.status_code == 400
    assert set(response.json()) == {"email", "role"}
    assert not Invitation.objects.exists()


def test_inviting_a_member_or_a_pending_address_again_is_refused(org, admin):
    member = MembershipFactory(organization=org, user=UserFactory(email="m@example.org")).user
    with pytest.raises(ValidationError, match="already a member"):
        services.invite(user=admin, organization=org, email=member.email.upper(), role="member")
    services.invite(user=admin, organization=org, email="p@example.org", role="member")
    with pytest.raises(ValidationError, match="pending"):
        services.invite(user=admin, organization=org, email="P@example.org", role="viewer")
    assert Invitation.objects.count() == 1


# --- Roles and removal -----------------------------------------------------------------------------------------------


def test_the_last_admin_can_be_neither_demoted_nor_removed(client, org, admin):
    client.force_login(admin)
    mine = Membership.objects.get(user=admin)
    response = client.post(reverse("members:role", args=[org.slug, mine.pk]), {"role": "member"})
    assert response.status_code == 400 and "last admin" in response.content.decode()
    response = client.post(reverse("members:remove", args=[org.slug, mine.pk]))
    assert response.status_code == 400 and "last admin" in response.content.decode()
    assert Membership.objects.get(pk=mine.pk).role == "admin"
    assert not AuditEvent.objects.exists()

    other = MembershipFactory(organization=org, role=Membership.Role.MEMBER)
    client.post(reverse("members:role", args=[org.slug, other.pk]), {"role": "admin"})
    assert client.post(reverse("members:role", args=[org.slug, mine.pk]), {"role": "viewer"}).status_code == 302
    assert Membership.objects.get(pk=mine.pk).role == "viewer"


def test_a_role_that_does_not_exist_is_refused(org, admin):
    member = MembershipFactory(organization=org)
    api = APIClient()
    api.force_authenticate(admin)
    url = reverse("organization-member-detail", args=[org.slug, member.pk])
    response = api.patch(url, {"role": "owner"}, format="json")
    assert response.status_code == 400 and "role" in response.json()
    assert Membership.objects.get(pk=member.pk).role == "member"
    assert api.patch(url, {"role": "viewer"}, format="json").json()["role"] == "viewer"
    event = AuditEvent.objects.get(action="member.role_changed")
    assert event.changes == {"role": ["member", "viewer"]} and event.actor == admin


def test_a_removed_member_loses_access_at_once_and_keeps_their_records(client, org, admin):
    gone = MembershipFactory(organization=org, role=Membership.Role.MEMBER)
    request = CapacityRequestFactory(organization=org, created_by=gone.user)
    workload = WorkloadFactory(organization=org, created_by=gone.user)
    token, key = create_token(user=gone.user, name="script", expires_in_days=30, via="page")
    their_session = APIClient()
    their_session.force_login(gone.user)
    assert their_session.get(reverse("org-home", args=[org.slug])).status_code == 200
    token_client = APIClient(HTTP_AUTHORIZATION=f"Token {key}")
    assert token_client.get(reverse("workload-detail", args=[workload.pk])).status_code == 200

    api = APIClient()
    api.force_authenticate(admin)
    assert api.delete(reverse("organization-member-detail", args=[org.slug, gone.pk])).status_code == 204

    assert their_session.get(reverse("org-home", args=[org.slug])).status_code == 404  # same session, next request
    assert token_client.get(reverse("workload-detail", args=[workload.pk])).status_code == 401
    token.refresh_from_db()
    assert token.revoked_at is not None and token.revoked_by == admin
    request.refresh_from_db()
    workload.refresh_from_db()
    assert request.created_by == gone.user and workload.created_by == gone.user
    event = AuditEvent.objects.get(action="member.removed")
    assert (event.comment, event.actor) == (gone.user.username, admin)


def test_a_member_in_another_org_keeps_tokens_that_no_longer_reach_this_one(org, admin):
    gone = MembershipFactory(organization=org)
    elsewhere = MembershipFactory(user=gone.user)
    workload = WorkloadFactory(organization=org)
    _token, key = create_token(user=gone.user, name="script", expires_in_days=30, via="page")
    services.remove_member(user=admin, membership=gone)
    token_client = APIClient(HTTP_AUTHORIZATION=f"Token {key}")
    assert token_client.get(reverse("workload-detail", args=[workload.pk])).status_code == 404
    assert token_client.get(reverse("organization-detail", args=[elsewhere.organization.slug])).status_code == 200


# --- Who may manage ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["member", "viewer"])
def test_members_and_viewers_read_the_members_but_cannot_manage_them(client, org, admin, role):
    me = MembershipFactory(organization=org, role=role).user
    client.force_login(me)
    page = client.get(reverse("members:list", args=[org.slug]))
    assert page.status_code == 200
    body = page.content.decode()
    assert admin.username in body
    assert reverse("members:invite", args=[org.slug]) not in body and 'name="role"' not in body
    target = Membership.objects.get(user=admin)
    assert (
        client.post(reverse("members:invite", args=[org.slug]), {"email": "x@example.org", "role": "admin"}).status_code
        == 403
    )
    assert client.post(reverse("members:role", args=[org.slug, target.pk]), {"role": "viewer"}).status_code == 403
    assert client.post(reverse("members:remove", args=[org.slug, target.pk])).status_code == 403
    api = APIClient()
    api.force_authenticate(me)
    assert api.get(reverse("organization-member-list", args=[org.slug])).json()["count"] == 2
    response = api.patch(
        reverse("organization-member-detail", args=[org.slug, target.pk]), {"role": "member"}, format="json"
    )
    assert response.status_code == 403
    assert (
        api.post(
            reverse("organization-invitation-list", args=[org.slug]),
            {"email": "x@example.org", "role": "admin"},
            format="json",
        ).status_code
        == 403
    )
    assert Membership.objects.get(pk=target.pk).role == "admin"
    assert not Invitation.objects.exists() and not AuditEvent.objects.exists()


@pytest.mark.parametrize("staff_role", ["program_manager", "support_engineer"])
def test_program_staff_manage_any_organizations_members(org, admin, staff_role, django_capture_on_commit_callbacks):
    staff = StaffRoleFactory(role=staff_role).user
    member = MembershipFactory(organization=org)
    api = APIClient()
    api.force_authenticate(staff)
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(
            reverse("organization-invitation-list", args=[org.slug]),
            {"email": "s@example.org", "role": "admin"},
            format="json",
        )
    assert response.status_code == 201 and response.json()["state"] == "active"
    assert "key" not in response.json() and len(mail.outbox) == 1
    assert api.get(reverse("organization-invitation-list", args=[org.slug])).json()["count"] == 1
    invitation = response.json()["id"]
    assert api.delete(reverse("organization-invitation-detail", args=[org.slug, invitation])).status_code == 204
    assert api.get(reverse("organization-invitation-list", args=[org.slug])).json()["count"] == 0
    assert (
        api.patch(
            reverse("organization-member-detail", args=[org.slug, member.pk]), {"role": "admin"}, format="json"
        ).status_code
        == 200
    )
    assert api.delete(reverse("organization-member-detail", args=[org.slug, member.pk])).status_code == 204
    actions = set(AuditEvent.objects.filter(actor=staff).values_list("action", flat=True))
    assert actions == {"member.invited", "member.invitation_revoked", "member.role_changed", "member.removed"}


def test_another_organizations_members_are_invisible(client, org, admin):
    theirs = OrganizationFactory()
    their_member = MembershipFactory(organization=theirs, role=Membership.Role.ADMIN)
    client.force_login(admin)
    assert client.get(reverse("members:list", args=[theirs.slug])).status_code == 404
    api = APIClient()
    api.force_authenticate(admin)
    assert api.get(reverse("organization-member-list", args=[theirs.slug])).status_code == 404
    assert api.get(reverse("organization-member-detail", args=[org.slug, their_member.pk])).status_code == 404
    ids = [m["id"] for m in api.get(reverse("organization-member-list", args=[org.slug])).json()["results"]]
    assert their_member.pk not in ids


def test_the_members_page_sorts_pages_and_keeps_its_queries_bounded(client, org, admin, django_assert_max_num_queries):
    for n in range(60):
        MembershipFactory(
            organization=org, user=UserFactory(username=f"person{n:02d}"), role="viewer" if n % 2 else "member"
        )
    client.force_login(admin)
    with django_assert_max_num_queries(12):
        page = client.get(reverse("members:list", args=[org.slug]) + "?sort=-username")
    rows = re.findall(r'data-username="([^"]+)"', page.content.decode())
    assert len(rows) == 50 and rows == sorted(rows, reverse=True)
    second = client.get(reverse("members:list", args=[org.slug]) + "?sort=-username&page=2")
    assert len(re.findall(r'data-username="', second.content.decode())) == 11


def test_the_members_page_in_japanese(client, org, admin, settings):
    client.force_login(admin)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "ja"
    page = client.get(reverse("members:list", args=[org.slug]))
    body = page.content.decode()
    assert "メンバー" in body and "招待" in body
