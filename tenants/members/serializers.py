"""API shapes of an organization's members and invitations."""

from __future__ import annotations

from rest_framework import serializers

from portal import serializers as api
from tenants.members.models import Invitation
from tenants.models import Membership

ROLE_HELP = "admin (manages the members, and everything a member does), member (requests capacity, runs clusters, "
ROLE_HELP += "keeps workloads and support cases) or viewer (reads everything of the organization, usage and cost "
ROLE_HELP += "included, and changes nothing)."


class MemberSerializer(api.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True, help_text="The member's username.")
    name = serializers.CharField(source="user.get_full_name", read_only=True, help_text="The member's full name.")
    email = serializers.EmailField(source="user.email", read_only=True, help_text="The member's email address.")
    role = serializers.ChoiceField(choices=Membership.Role.choices, help_text=ROLE_HELP)
    source = serializers.CharField(
        read_only=True,
        help_text="Where the membership came from: local (an admin or an invitation; sign-in never changes it), "
        "sso (the groups the person's institution sends at sign-in, which each sign-in follows) or scim (an "
        "institution's provisioning). An admin changing the role makes it local.",
    )

    class Meta:
        model = Membership
        fields = ["id", "username", "name", "email", "role", "source", "created_at"]
        read_only_fields = ["id", "username", "name", "email", "source", "created_at"]
        extra_kwargs = {
            "id": {"help_text": "The membership's id, in the member's URL."},
            "created_at": {"help_text": "When the person joined the organization."},
        }


class RoleChangeSerializer(api.Serializer):
    role = serializers.CharField(max_length=16, help_text=ROLE_HELP)


class InvitationSerializer(api.ModelSerializer):
    state = serializers.CharField(read_only=True, help_text="active (pending), accepted, revoked or expired.")
    role = serializers.CharField(max_length=16, help_text=ROLE_HELP)
    email = serializers.CharField(max_length=254, help_text="The address the single-use link is sent to.")
    invited_by = api.SlugRelatedField(
        slug_field="username", read_only=True, help_text="Username of the person who sent the invitation."
    )

    class Meta:
        model = Invitation
        fields = ["id", "email", "role", "state", "invited_by", "created_at", "expires_at", "accepted_at"]
        read_only_fields = ["id", "state", "invited_by", "created_at", "expires_at", "accepted_at"]
        extra_kwargs = {
            "id": {"help_text": "The invitation's id, in its URL."},
            "created_at": {"help_text": "When the invitation was sent."},
            "expires_at": {"help_text": "When its link stops working (INVITATION_DAYS after sending)."},
            "accepted_at": {"help_text": "When the invitee joined; null while pending."},
        }
