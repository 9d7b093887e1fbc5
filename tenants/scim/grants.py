"""What a person's SCIM groups grant: the memberships and the staff role their names read as (tenants.sso.mapping,
the same rules as the groups claim at sign-in), brought in line after every change of a group or of its members.

Only grants SCIM made (source "scim") are changed or removed; a membership or staff role granted in the portal or
by sign-in is never touched, and where one exists SCIM grants nothing on top of it. An organization is never left
without an admin: a change that would remove or demote its last admin is refused (the request changes nothing and
is answered 409, naming the person and the organization), except when the person is deleted through SCIM, who is
deactivated anyway: their last-admin membership is then kept, and the audit trail says so."""

from __future__ import annotations

import logging

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

from tenants.audit import record_audit
from tenants.models import GrantSource, Membership, Organization
from tenants.sso.mapping import Placement, target_of
from tenants.sso.services import sync_staff_role

logger = logging.getLogger("portal.scim")


def placement_of(user) -> Placement:
    placement = Placement()
    for name in user.scim_groups.order_by("display_name").values_list("display_name", flat=True):
        target = target_of(name)
        if target is None:
            continue
        placement.groups.append(name)
        if not placement.grant(target):
            logger.warning("SCIM group %r names no role the portal has (%r): grants nothing", name, target)
    return placement


def _is_last_admin(membership: Membership) -> bool:
    admins = list(
        Membership.objects.select_for_update()
        .filter(organization_id=membership.organization_id, role=Membership.Role.ADMIN)
        .values_list("pk", flat=True)
    )
    return admins == [membership.pk]


def last_admin_refusal(membership: Membership) -> ValidationError:
    return ValidationError(
        _(
            "%(name)s is the last admin of %(org)s: make someone else admin there first, then remove them from the "
            "group."
        )
        % {"name": membership.user.get_username(), "org": membership.organization.name},
        code="last_admin",
    )


def sync_grants(*, user, comment: str, keep_last_admin: bool = False) -> None:
    """Grant, change and remove the memberships and the staff role SCIM granted `user`, each recorded (the
    organization's audit trail; Django admin's history for a staff role). Raises ValidationError (code
    "last_admin") rather than leave an organization without an admin, unless `keep_last_admin`."""
    placement = placement_of(user)
    organizations = {o.slug: o for o in Organization.objects.filter(slug__in=placement.organizations)}
    for slug in sorted(set(placement.organizations) - set(organizations)):
        logger.warning("SCIM groups of %s name organization %r, which does not exist", user.get_username(), slug)
    wanted = {organizations[slug]: role for slug, role in placement.organizations.items() if slug in organizations}
    current = {
        m.organization_id: m
        for m in Membership.objects.select_for_update().select_related("organization", "user").filter(user=user)
    }
    for org, role in sorted(wanted.items(), key=lambda item: item[0].slug):
        membership = current.get(org.pk)
        if membership is None:
            membership = Membership.objects.create(user=user, organization=org, role=role, source=GrantSource.SCIM)
            record_audit(actor=None, organization=org, action="scim.membership_granted", target=membership,
                         changes={"role": (None, role)}, comment=comment)  # fmt: skip
        elif membership.source == GrantSource.SCIM and membership.role != role:
            if membership.is_admin and _is_last_admin(membership):
                raise last_admin_refusal(membership)
            before, membership.role = membership.role, role
            membership.save(update_fields=["role"])
            record_audit(actor=None, organization=org, action="scim.role_changed", target=membership,
                         changes={"role": (before, role)}, comment=comment)  # fmt: skip
    wanted_ids = {org.pk for org in wanted}
    for membership in current.values():
        if membership.source != GrantSource.SCIM or membership.organization_id in wanted_ids:
            continue
        if membership.is_admin and _is_last_admin(membership):
            if not keep_last_admin:
                raise last_admin_refusal(membership)
            record_audit(actor=None, organization=membership.organization, action="scim.last_admin_kept",
                         target=membership, comment=comment)  # fmt: skip
            continue
        record_audit(actor=None, organization=membership.organization, action="scim.membership_removed",
                     target=membership, changes={"role": (membership.role, None)}, comment=comment)  # fmt: skip
        membership.delete()
    sync_staff_role(
        user=user, wanted=placement.staff_role, source=GrantSource.SCIM, via="through SCIM", comment=comment
    )
