"""API shapes of an organization's service accounts and their tokens."""

from __future__ import annotations

from rest_framework import serializers

from portal import serializers as api
from tenants.service_accounts.models import DESCRIPTION_MAX, NAME_MAX, ServiceAccount
from tenants.tokens import services as tokens
from tenants.tokens.serializers import ApiTokenSerializer

ROLE_HELP = "member (requests capacity, keeps workloads and support cases, like a member of the organization) or "
ROLE_HELP += "viewer (reads everything of the organization and changes nothing). Never admin: a service account "
ROLE_HELP += "manages neither members nor service accounts."
NAME_HELP = (
    f"Up to {NAME_MAX} letters, digits and hyphens, starting and ending with a letter or digit; unique in the "
    "organization without regard to case. The account's username is svc-<organization slug>-<name, lower case>."
)


class ServiceAccountSerializer(api.ModelSerializer):
    username = serializers.CharField(
        source="user.username", read_only=True, help_text="The account's username: svc-<organization>-<name>."
    )
    role = serializers.CharField(
        read_only=True, allow_null=True, help_text=ROLE_HELP + " Null if its membership was removed in Django admin."
    )
    state = serializers.CharField(
        read_only=True, help_text="active, or disabled (its tokens revoked, no request accepted)."
    )
    active_tokens = serializers.IntegerField(
        read_only=True, help_text="How many of its tokens work now (neither revoked nor expired)."
    )
    created_by = api.SlugRelatedField(
        slug_field="username", read_only=True, help_text="Username of the person who created the account."
    )
    disabled_by = api.SlugRelatedField(
        slug_field="username", read_only=True, help_text="Username of the person who disabled it; null if active."
    )

    class Meta:
        model = ServiceAccount
        fields = [
            "id",
            "name",
            "username",
            "description",
            "role",
            "state",
            "active_tokens",
            "created_by",
            "created_at",
            "disabled_at",
            "disabled_by",
        ]
        read_only_fields = fields
        extra_kwargs = {
            "id": {"help_text": "The service account's id, in its URL."},
            "name": {"help_text": NAME_HELP},
            "description": {"help_text": "What uses the account, and who to ask about it."},
            "disabled_at": {"help_text": "When it was disabled; null while active."},
        }


class NewServiceAccountSerializer(api.Serializer):
    name = serializers.CharField(max_length=NAME_MAX, help_text=NAME_HELP)
    role = serializers.CharField(max_length=16, default="member", help_text=ROLE_HELP + " Default member.")
    description = serializers.CharField(
        max_length=DESCRIPTION_MAX,
        required=False,
        allow_blank=True,
        default="",
        help_text="What uses the account, and who to ask about it.",
    )


class ServiceAccountChangeSerializer(api.Serializer):
    role = serializers.CharField(max_length=16, required=False, help_text=ROLE_HELP)
    description = serializers.CharField(
        max_length=DESCRIPTION_MAX,
        required=False,
        allow_blank=True,
        help_text="What uses the account, and who to ask about it.",
    )


class ServiceAccountTokenSerializer(ApiTokenSerializer):
    created_by = api.SlugRelatedField(
        slug_field="username",
        read_only=True,
        help_text="Username of the person who created the token for the service account.",
    )

    class Meta(ApiTokenSerializer.Meta):
        fields = [*ApiTokenSerializer.Meta.fields, "created_by"]
        read_only_fields = fields


class IssuedServiceAccountTokenSerializer(ServiceAccountTokenSerializer):
    token = serializers.CharField(read_only=True, help_text="The key: shown this once, never again.")

    class Meta(ServiceAccountTokenSerializer.Meta):
        fields = ["token", *ServiceAccountTokenSerializer.Meta.fields]
        read_only_fields = fields


class NewServiceAccountTokenSerializer(api.Serializer):
    name = serializers.CharField(
        max_length=100, help_text="What the token is for, e.g. the script or machine that uses it."
    )
    expires_in_days = serializers.IntegerField(
        min_value=1,
        max_value=tokens.MAX_DAYS,
        default=tokens.DEFAULT_DAYS,
        help_text=f"Days until the token stops working (1 to {tokens.MAX_DAYS}; default {tokens.DEFAULT_DAYS}).",
    )
