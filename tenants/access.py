"""The only code that decides who may see and do what in an organization.

Pages and API both enter a tenant through `get_org_access_or_404`: "no such org" and "not yours" are
the same 404, so a tenant cannot even learn which other organizations exist. What a person may then do
there is a predicate of `OrgAccess` (or, program-wide, a function below): pages, API and services all ask
the same one.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404
from django.utils.translation import gettext as _

from tenants.models import Membership, Organization, StaffRole


class SystemActor:
    """The portal itself acting — a worker opening a case for a health incident or a failed validation — so
    no person is impersonated. Services that accept it record no actor; history shows "system"."""

    is_authenticated = True
    pk = None

    def __repr__(self) -> str:
        return "SYSTEM"


SYSTEM = SystemActor()


def staff_role(user) -> StaffRole | None:
    return None if user is SYSTEM else StaffRole.of(user)


def is_program_staff(user) -> bool:
    return staff_role(user) is not None


def is_program_manager(user) -> bool:
    role = staff_role(user)
    return role is not None and role.is_program_manager


def can_read_internal_notes(user) -> bool:
    """Internal notes on support cases (and anything else marked internal) are for program staff only."""
    return is_program_staff(user)


def require_program_staff(user, message: str | None = None) -> None:
    if not is_program_staff(user):
        raise PermissionDenied(message or _("This page is for program staff."))


def require_program_manager(user, message: str | None = None) -> None:
    if not is_program_manager(user):
        raise PermissionDenied(message or _("Only a program manager can do this."))


def can_reset_second_factor(actor, target) -> bool:
    """Who may remove another staff account's second factor (a lost phone): a program manager or a superuser, and
    only a superuser a superuser's."""
    if not (is_program_manager(actor) or getattr(actor, "is_superuser", False)):
        return False
    return getattr(actor, "is_superuser", False) or not target.is_superuser


def program_staff_users() -> QuerySet:
    """People who can be assigned cases, own action items or attend the weekly review."""
    return get_user_model().objects.filter(staff_role__isnull=False, is_active=True).order_by("username")


def visible_organizations(user) -> QuerySet[Organization]:
    """Program staff see every organization; a tenant sees the ones it is a member of."""
    return Organization.objects.visible_to(user)


def acting_organizations(user) -> QuerySet[Organization]:
    """The organizations where the user may change things: every one for program staff, else those where the
    user is a member or an admin (not a viewer). Pages offer their "new …" buttons for these only."""
    if is_program_staff(user):
        return Organization.objects.all()
    acting = [Membership.Role.ADMIN, Membership.Role.MEMBER]
    return Organization.objects.filter(memberships__user=user, memberships__role__in=acting)


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
    def is_program_manager(self) -> bool:
        return self.staff is not None and self.staff.is_program_manager

    @property
    def is_viewer(self) -> bool:
        return self.membership is not None and self.membership.role == Membership.Role.VIEWER

    @property
    def acts(self) -> bool:
        """A member or admin of the organization: a viewer only reads."""
        return self.membership is not None and self.membership.role != Membership.Role.VIEWER

    @property
    def can_write(self) -> bool:
        # Members and program staff act in the org (open cases, comment); viewers only read.
        return self.acts or self.staff is not None

    @property
    def can_admin(self) -> bool:
        # Tokens and the AWS account link.
        return (self.membership is not None and self.membership.is_admin) or self.is_program_manager

    @property
    def can_manage_members(self) -> bool:
        # Invite, change roles, remove: the organization's admins, and program staff for any organization.
        return (self.membership is not None and self.membership.is_admin) or self.is_staff

    @property
    def can_manage_service_accounts(self) -> bool:
        # Create, change, disable and enable them, make and revoke their tokens: whoever manages the members. A
        # service account is never admin (tenants.service_accounts.services), so it manages neither.
        return self.can_manage_members

    @property
    def can_request_capacity(self) -> bool:
        # Capacity is asked for by the organization's own members; program staff decide, they do not ask.
        return self.acts

    @property
    def can_write_workloads(self) -> bool:
        # A tenant keeps its own workload records; program staff read every org's.
        return self.acts

    @property
    def can_operate_clusters(self) -> bool:
        # Creating and deleting spends the tenant's allocation: its members and program managers may;
        # support engineers watch and help but do not.
        return self.acts or self.is_program_manager

    def require(self, allowed: bool, message: str) -> None:
        """The 403 for a predicate above that says no; a viewer is told that the role reads only."""
        if not allowed and self.is_viewer:
            raise PermissionDenied(viewer_message(self.organization))
        require(allowed, message)


def viewer_message(organization: Organization) -> str:
    return _(
        "Your role in %(org)s is viewer: you can read everything but change nothing. "
        "Ask one of its admins for the member role."
    ) % {"org": organization}


def require(allowed: bool, message: str) -> None:
    """Raise the 403 a page or the API answers when a predicate above says no."""
    if not allowed:
        raise PermissionDenied(message)


def get_org_access_or_404(user, org_slug: str) -> OrgAccess:
    if not user.is_authenticated or user is SYSTEM:
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


def writes_anywhere(user) -> bool:
    """Whether the user may change anything at all: program staff, or a member or admin of some organization.
    A person who is only ever a viewer is refused every write before its body is read."""
    if is_program_staff(user):
        return True
    return Membership.objects.filter(user=user).exclude(role=Membership.Role.VIEWER).exists()


def require_writer(user) -> None:
    if not writes_anywhere(user):
        raise PermissionDenied(
            _("Your role is viewer in every organization you belong to: you can read but change nothing.")
        )
