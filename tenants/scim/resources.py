"""Portal rows as SCIM resources (scim2-models' objects) and back: what a User and a Group read like, and the list
endpoints' filter and paging. A filter the database can answer (`userName eq "…"`, `externalId eq "…"`,
`displayName eq "…"`, `id eq "…"`: what Entra ID, Okta and Keycloak send) is a query; any other is evaluated by
scim2-models on each resource, so every filter of RFC 7644 §3.4.2.2 works, at the cost of reading every row."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db.models import Q, QuerySet
from scim2_models import GroupMembership, Meta, ScimFilter
from scim2_models.path.expressions import CompareOperator, Comparison

from tenants.scim import schema
from tenants.scim.models import ScimGroup, ScimUser

USER_LOOKUPS = {"username": "user__username__iexact", "externalid": "external_id", "id": "scim_id"}
GROUP_LOOKUPS = {"displayname": "display_name__iexact", "externalid": "external_id", "id": "scim_id"}


@dataclass(frozen=True)
class Links:
    """Absolute URLs of resources (meta.location, a member's $ref): the request's base, /scim/v2."""

    base: str

    def user(self, scim_id) -> str:
        return f"{self.base}/Users/{scim_id}"

    def group(self, scim_id) -> str:
        return f"{self.base}/Groups/{scim_id}"


def user_resource(scim_user: ScimUser, links: Links) -> schema.User:
    user = scim_user.user
    name = None
    if user.first_name or user.last_name:
        name = schema.Name(given_name=user.first_name or None, family_name=user.last_name or None)
    groups = [
        GroupMembership(value=str(group.scim_id), ref=links.group(group.scim_id), display=group.display_name)
        for group in user.scim_groups.all()
    ]
    return schema.User(
        id=str(scim_user.scim_id),
        external_id=scim_user.external_id or None,
        user_name=user.username,
        name=name,
        display_name=scim_user.display_name or None,
        active=user.is_active,
        emails=[schema.UserEmail.model_validate(email) for email in scim_user.emails] or None,
        groups=groups or None,
        meta=Meta(
            resource_type="User",
            created=scim_user.created_at,
            last_modified=scim_user.updated_at,
            location=links.user(scim_user.scim_id),
        ),
    )


def group_resource(group: ScimGroup, links: Links) -> schema.Group:
    members = [
        schema.Member(value=str(scim_id), ref=links.user(scim_id))
        for scim_id in ScimUser.objects.filter(user__scim_groups=group).order_by("pk").values_list("scim_id", flat=True)
    ]
    return schema.Group(
        id=str(group.scim_id),
        external_id=group.external_id or None,
        display_name=group.display_name,
        members=members or None,
        meta=Meta(
            resource_type="Group",
            created=group.created_at,
            last_modified=group.updated_at,
            location=links.group(group.scim_id),
        ),
    )


def users() -> QuerySet[ScimUser]:
    return ScimUser.objects.select_related("user").prefetch_related("user__scim_groups").order_by("pk")


def groups() -> QuerySet[ScimGroup]:
    return ScimGroup.objects.order_by("pk")


def _indexed(scim_filter: ScimFilter, lookups: dict[str, str]) -> Q | None:
    """The query for a filter the database answers alone, None for any other."""
    node = scim_filter.ast
    if not isinstance(node, Comparison) or node.op != CompareOperator.eq or node.attr_path.sub_attr:
        return None
    if node.attr_path.uri and node.attr_path.uri not in (schema.USER_SCHEMA, schema.GROUP_SCHEMA):
        return None
    lookup = lookups.get(node.attr_path.attr.lower())
    if lookup is None or not isinstance(node.value, str):
        return None
    if lookup == "scim_id":
        try:
            return Q(scim_id=uuid.UUID(node.value))
        except ValueError:
            return Q(pk__in=[])  # no resource has an id that is not ours
    return Q(**{lookup: node.value})


def search(
    queryset: QuerySet,
    *,
    scim_filter: ScimFilter | None,
    lookups: dict[str, str],
    render: Callable[[Any], Any],
    start_index: int,
    count: int,
) -> tuple[int, list]:
    """The total matching, and the page from `start_index` (1-based) of at most `count`, as resources."""
    if scim_filter is not None:
        query = _indexed(scim_filter, lookups)
        if query is None:
            matching = [resource for row in queryset if scim_filter.match(resource := render(row))]
            return len(matching), matching[start_index - 1 : start_index - 1 + count]
        queryset = queryset.filter(query)
    total = queryset.count()
    page = queryset[start_index - 1 : start_index - 1 + count] if count else []
    return total, [render(row) for row in page]
