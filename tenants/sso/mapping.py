"""Which organizations, with which role, and which program staff role the groups claim gives a person.

A group places someone when it reads `<prefix>:<org-slug>:<role>` or `<prefix>:staff:<staff-role>` (with the
default prefix: `fmportal:sakura-lab:admin`, `fmportal:staff:program_manager`), or the same as a path
(`/fmportal/sakura-lab/admin`, Keycloak's full group path), or when OIDC_GROUP_MAP maps the group's own name to
`<org-slug>:<role>` or `staff:<staff-role>`. A role is any value of Membership.Role or StaffRole.Role; every other
group (institutions send many) is ignored. Two roles in one organization: the stronger one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from django.conf import settings

from tenants.models import Membership, StaffRole
from tenants.sso.providers import Provider

logger = logging.getLogger("portal.sso")

STAFF = "staff"
# Stronger first; a role this list does not know (one added later) ranks below those it does.
MEMBERSHIP_STRENGTH = ["admin", "member", "viewer"]
STAFF_STRENGTH = [StaffRole.Role.PROGRAM_MANAGER, StaffRole.Role.SUPPORT_ENGINEER]


@dataclass
class Placement:
    """What the groups grant: organization slug → membership role, and a staff role or None."""

    organizations: dict[str, str] = field(default_factory=dict)
    staff_role: str | None = None
    groups: list[str] = field(default_factory=list)  # the program's groups among those sent, for the pages

    def grant(self, target: str) -> bool:
        """Add one `<org-slug>:<role>` or `staff:<role>`; False when it names no role there is."""
        scope, _, role = target.strip().partition(":")
        role = role.strip().lower().replace("-", "_")
        if scope == STAFF:
            if role not in StaffRole.Role.values:
                return False
            self.staff_role = _stronger(self.staff_role, role, STAFF_STRENGTH)
            return True
        if not scope or role not in Membership.Role.values:
            return False
        self.organizations[scope] = _stronger(self.organizations.get(scope), role, MEMBERSHIP_STRENGTH)
        return True


def _stronger(current: str | None, candidate: str, order: list[str]) -> str:
    if current is None:
        return candidate
    rank = {role: i for i, role in enumerate(order)}
    return min(current, candidate, key=lambda role: rank.get(role, len(order)))


def target_of(group: str, provider: Provider | None = None) -> str | None:
    """`<org-slug>:<role>` or `staff:<role>` for a group of the program's, None for any other group. The rules
    are the provider's (its `group_map` and `group_prefix`); without one, the OIDC_* settings'."""
    group_map = provider.group_map if provider else settings.OIDC_GROUP_MAP
    prefix = provider.group_prefix if provider else settings.OIDC_GROUP_PREFIX
    mapped = group_map.get(group)
    if mapped is not None:
        return mapped
    separator = "/" if group.startswith("/") else ":"
    parts = group.strip("/").split(separator)
    if len(parts) == 3 and parts[0] == prefix:
        return f"{parts[1]}:{parts[2]}"
    return None


def groups_of(claims: dict, provider: Provider | None = None) -> list[str]:
    value = claims.get(provider.groups_claim if provider else settings.OIDC_GROUPS_CLAIM)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


def place(claims: dict, provider: Provider | None = None) -> Placement:
    placement = Placement()
    for group in groups_of(claims, provider):
        target = target_of(group, provider)
        if target is None:
            continue
        placement.groups.append(group)
        if not placement.grant(target):
            logger.warning("Group %r names no role the portal has (%r): ignored", group, target)
    return placement
