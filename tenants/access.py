"""The only code that decides who may see and do what in an organization.

Pages and API both enter a tenant through `get_org_access_or_404`: "no such org" and "not yours" are
the same 404, so a tenant cannot even learn which other organizations exist.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet
from django.http import Http404
from django.utils.translation import gettext as _

from tenants.models import Membership, Organization, StaffRole


def staff_role(user) -> StaffRole | None:
    if not user.is_authenticated:
        return None
    try:
        return user.staff_role
    except StaffRole.DoesNotExist:
        return None


def is_program_staff(user) -> bool:
    return staff_role(user) is not None


def is_program_manager(user) -> bool:
    role = staff_role(user)
    return role is not None and role.is_program_manager


def visible_organizations(user) -> QuerySet[Organization]:
    """Program staff see every organization; a tenant sees the ones it is a member of."""
    if not user.is_authenticated:
        return Organization.objects.none()
    if is_program_staff(user):
        return Organization.objects.all()
    return Organization.objects.filter(memberships__user=user)


@dataclass(frozen=True)
class OrgAccess:
    """What one user may do in one organization."""

    organization: Organization
    membership: Membership | None
    staff: StaffRole | None

    @property
    def is_staff(self) -> bool:
        return self.staff is not None

    @property
    def can_write(self) -> bool:
        # Members and program staff act in the org (request capacity, open cases, comment).
        return self.membership is not None or self.staff is not None

    @property
    def can_admin(self) -> bool:
        # Manage members, tokens and the AWS account link.
        return (self.membership is not None and self.membership.is_admin) or (
            self.staff is not None and self.staff.is_program_manager
        )


def get_org_access_or_404(user, org_slug: str) -> OrgAccess:
    if not user.is_authenticated:
        raise Http404(_("No such organization."))
    staff = staff_role(user)
    if staff is not None:
        try:
            return OrgAccess(organization=Organization.objects.get(slug=org_slug), membership=None, staff=staff)
        except Organization.DoesNotExist:
            raise Http404(_("No such organization.")) from None
    membership = (
        Membership.objects.select_related("organization").filter(user=user, organization__slug=org_slug).first()
    )
    if membership is None:
        raise Http404(_("No such organization."))
    return OrgAccess(organization=membership.organization, membership=membership, staff=None)
