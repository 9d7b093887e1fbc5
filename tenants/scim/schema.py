"""What the portal's SCIM service is, in scim2-models' terms: the attributes of a User and a Group it keeps (only
those: a client reads back what it wrote, or is told the attribute does not exist), what it announces on
/ServiceProviderConfig, /ResourceTypes and /Schemas, and how much it forgives a client's departures from the RFCs
(the policy: Entra ID's capitalized ops and `remove` with a value, extension attributes the portal does not keep)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import EmailStr, Field
from scim2_models import (
    URN,
    AuthenticationScheme,
    Bulk,
    CaseExact,
    ChangePassword,
    ComplexAttribute,
    Email,
    ETag,
    Filter,
    GroupMembership,
    Mutability,
    Patch,
    Reference,
    Required,
    Resource,
    ResourceType,
    Schema,
    ScimPolicy,
    ServiceProviderConfig,
    Sort,
    Uniqueness,
)

USER_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP_SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Group"
MAX_RESULTS = 200  # a page of a list: clients page with startIndex and count
DOCUMENTATION = "https://datatracker.ietf.org/doc/html/rfc7644"


class Name(ComplexAttribute):
    family_name: str | None = Field(None, max_length=150)
    given_name: str | None = Field(None, max_length=150)


class UserEmail(ComplexAttribute):
    value: EmailStr | None = None
    type: Email.Type | None = None
    primary: bool | None = None


class User(Resource[Any]):
    """A person: userName is the portal's username (unique without regard to case), active its is_active."""

    __schema__ = URN(USER_SCHEMA)

    user_name: Annotated[str | None, Uniqueness.server, Required.true] = Field(None, max_length=150)
    name: Name | None = None
    display_name: str | None = Field(None, max_length=255)
    # Required: whether the person may sign in is the one thing the portal must be told (Entra ID, Okta, Keycloak's
    # and midPoint's connectors always send it); removing it would leave the account neither active nor not.
    active: Annotated[bool | None, Required.true] = None
    emails: list[UserEmail] | None = None
    groups: Annotated[list[GroupMembership] | None, Mutability.read_only] = None


class Member(ComplexAttribute):
    """A group's member: a user of this service (nested groups are not kept), as the client wrote it (its id and
    location; a `display` or `type` sent is not kept)."""

    value: Annotated[str | None, Mutability.immutable, CaseExact.true] = None
    ref: Annotated[Reference[User] | None, Mutability.immutable] = Field(  # type: ignore[type-arg]
        None, serialization_alias="$ref", validation_alias="$ref"
    )


class Group(Resource[Any]):
    __schema__ = URN(GROUP_SCHEMA)

    display_name: Annotated[str | None, Required.true] = Field(None, max_length=255)
    members: list[Member] | None = None


POLICY = ScimPolicy(
    # Extension attributes (Entra's enterprise user, Okta's custom ones) are accepted and not kept.
    unknown=ScimPolicy.Unknown.ignore,
    # Entra ID removes a member with {"op": "remove", "path": "members", "value": [{"value": id}]}.
    remove_value_as_filter=ScimPolicy.RemoveValue.apply,
    # Entra ID replaces emails[type eq "work"].value on a user who has none yet.
    unmatched_path_filter=ScimPolicy.UnmatchedPathFilter.create,
)


def service_provider_config() -> ServiceProviderConfig:
    return ServiceProviderConfig(
        documentation_uri=DOCUMENTATION,
        patch=Patch(supported=True),
        bulk=Bulk(supported=False, max_operations=0, max_payload_size=0),
        filter=Filter(supported=True, max_results=MAX_RESULTS),
        change_password=ChangePassword(supported=False),
        sort=Sort(supported=False),
        etag=ETag(supported=False),
        authentication_schemes=[
            AuthenticationScheme(
                type="oauthbearertoken",
                name="Bearer token",
                description="A SCIM token made by the program team (manage.py scim_token create), sent as "
                "Authorization: Bearer <token>.",
                primary=True,
            )
        ],
    )


RESOURCES = {"User": (User, "/Users", "User Account"), "Group": (Group, "/Groups", "Group")}


def resource_types() -> list[ResourceType]:
    found = []
    for name, (model, endpoint, description) in RESOURCES.items():
        resource_type = ResourceType.from_resource(model)
        resource_type.id = resource_type.name = name
        resource_type.endpoint = endpoint
        resource_type.description = description
        found.append(resource_type)
    return found


def schemas() -> list[Schema]:
    found = []
    for name, (model, _endpoint, description) in RESOURCES.items():
        schema = model.to_schema()
        schema.name, schema.description = name, description
        found.append(schema)
    return found
