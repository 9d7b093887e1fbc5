"""SCIM Groups: a group named like the sign-in groups claim (<prefix>:<org>:<role>, <prefix>:staff:<role>) grants
that to its members, with source "scim"; only SCIM's own grants are ever changed or removed."""

import pytest
from django.contrib.auth import get_user_model

from tenants.models import AuditEvent, GrantSource, Membership, StaffRole
from tenants.scim.models import ScimGroup
from tests.factories import MembershipFactory
from tests.scim.conftest import GROUP, assert_scim_error

pytestmark = pytest.mark.django_db
User = get_user_model()


def _membership(username: str, org):
    return Membership.objects.filter(user__username=username, organization=org).first()


def test_a_group_grants_its_membership_and_removing_the_member_takes_it_back(scim, org):
    ann = scim.create_user("ann")
    group = scim.create_group("fmportal:alpha:member", ann["id"])
    membership = _membership("ann", org)
    assert (membership.role, membership.source) == ("member", GrantSource.SCIM)
    assert AuditEvent.objects.filter(organization=org, action="scim.membership_granted").exists()
    assert scim.get(f"/Users/{ann['id']}").json()["groups"][0]["value"] == group["id"]

    response = scim.patch(f"/Groups/{group['id']}", {"op": "remove", "path": f'members[value eq "{ann["id"]}"]'})
    assert response.status_code == 200 and "members" not in response.json()
    assert _membership("ann", org) is None
    assert AuditEvent.objects.filter(organization=org, action="scim.membership_removed").exists()

    response = scim.patch(f"/Groups/{group['id']}", {"op": "add", "path": "members", "value": [{"value": ann["id"]}]})
    assert response.status_code == 200 and _membership("ann", org).source == GrantSource.SCIM
    # Entra ID's removal: the member in the value, not in the path.
    scim.patch(f"/Groups/{group['id']}", {"op": "Remove", "path": "members", "value": [{"value": ann["id"]}]})
    assert _membership("ann", org) is None


def test_a_local_membership_is_never_touched(scim, org):
    ben = scim.create_user("ben")
    local = MembershipFactory(user=User.objects.get(username="ben"), organization=org, role=Membership.Role.VIEWER)
    group = scim.create_group("fmportal:alpha:admin", ben["id"])
    local.refresh_from_db()
    assert (local.role, local.source) == ("viewer", GrantSource.LOCAL)
    assert scim.delete(f"/Groups/{group['id']}").status_code == 204
    assert Membership.objects.filter(pk=local.pk).exists()


def test_renaming_or_deleting_a_group_moves_or_removes_its_grants(scim, org, other_org):
    cid = scim.create_user("cid")["id"]
    group = scim.create_group("fmportal:alpha:member", cid)
    scim.patch(f"/Groups/{group['id']}", {"op": "replace", "path": "displayName", "value": "fmportal:beta:viewer"})
    assert _membership("cid", org) is None and _membership("cid", other_org).role == "viewer"
    scim.delete(f"/Groups/{group['id']}")
    assert _membership("cid", other_org) is None


def test_the_last_admin_is_not_removed(scim, org):
    dee = scim.create_user("dee")["id"]
    group = scim.create_group("fmportal:alpha:admin", dee)
    body = assert_scim_error(scim.patch(f"/Groups/{group['id']}", {"op": "remove", "path": "members"}), 409)
    assert "dee is the last admin of Alpha Lab" in body["detail"]
    assert _membership("dee", org).role == "admin"
    assert_scim_error(scim.delete(f"/Groups/{group['id']}"), 409)
    assert ScimGroup.objects.filter(display_name="fmportal:alpha:admin").exists()  # nothing changed
    # With another admin, the same removal goes through.
    MembershipFactory(organization=org, role=Membership.Role.ADMIN)
    assert scim.patch(f"/Groups/{group['id']}", {"op": "remove", "path": "members"}).status_code == 200
    assert _membership("dee", org) is None


def test_deleting_the_last_admins_account_keeps_the_membership_and_says_so(scim, org):
    eve = scim.create_user("eve")["id"]
    scim.create_group("fmportal:alpha:admin", eve)
    assert scim.delete(f"/Users/{eve}").status_code == 204
    assert _membership("eve", org).role == "admin"
    assert AuditEvent.objects.filter(organization=org, action="scim.last_admin_kept").exists()


def test_a_group_the_portal_does_not_understand_is_kept_and_grants_nothing(scim, org):
    fay = scim.create_user("fay")["id"]
    group = scim.create_group("All staff of Sakura University", fay)
    assert scim.get(f"/Groups/{group['id']}").json()["displayName"] == "All staff of Sakura University"
    found = scim.get('/Groups?filter=displayName eq "all staff of sakura university"').json()
    assert [g["id"] for g in found["Resources"]] == [group["id"]]
    assert not Membership.objects.filter(user__username="fay").exists()
    scim.create_group("fmportal:no-such-org:admin", fay)
    assert not Membership.objects.filter(user__username="fay").exists()


def test_a_staff_group_grants_the_staff_role(scim):
    gus = scim.create_user("gus")["id"]
    group = scim.create_group("fmportal:staff:support_engineer", gus)
    staff = StaffRole.objects.get(user__username="gus")
    assert (staff.role, staff.source) == ("support_engineer", GrantSource.SCIM)
    scim.delete(f"/Groups/{group['id']}")
    assert not StaffRole.objects.filter(user__username="gus").exists()


def test_an_unknown_member_is_refused(scim):
    body = {"schemas": [GROUP], "displayName": "g", "members": [{"value": "5f0c7a0e-0000-4000-8000-000000000000"}]}
    assert_scim_error(scim.post("/Groups", body), 400, "invalidValue")
    assert not ScimGroup.objects.exists()
