"""API of an organization's members and invitations, under /api/v1/organizations/{slug}/. Everyone in the org reads
its members; its admins (and program staff) invite, change roles and remove (tenants.members.services)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.response import Response

from tenants.access import OrgAccess, get_org_access_or_404
from tenants.api import WritesByRole
from tenants.members import services
from tenants.members.models import Invitation
from tenants.members.serializers import InvitationSerializer, MemberSerializer, RoleChangeSerializer
from tenants.models import Membership
from tenants.service_accounts.models import people

ORG_SLUG = OpenApiParameter(
    "org_slug", str, OpenApiParameter.PATH, description="Slug of the organization (one of yours)."
)


class OrganizationChildViewSet(viewsets.GenericViewSet):
    """Rows of one organization named by the URL's slug: through the gate (another org's slug is a 404), the
    queryset is that organization's rows only."""

    permission_classes = [WritesByRole]
    lookup_value_regex = r"[0-9]+"

    def org_access(self) -> OrgAccess:
        if not hasattr(self, "_access"):
            self._access = get_org_access_or_404(self.request.user, self.kwargs["org_slug"])
        return self._access

    def check_permissions(self, request):
        super().check_permissions(request)
        self.org_access()  # 404 for another org's slug, before anything else

    def check_object_permissions(self, request, obj):
        pass  # the object is of the URL's organization, whose access check_permissions read


@extend_schema_view(
    list=extend_schema(
        parameters=[ORG_SLUG],
        description="The organization's members (people: its service accounts are under service-accounts/), sorted "
        "by username.",
    ),
    retrieve=extend_schema(parameters=[ORG_SLUG]),
    partial_update=extend_schema(
        parameters=[ORG_SLUG],
        request=RoleChangeSerializer,
        description="Change a member's role (admins and program staff). The last admin cannot be demoted.",
    ),
    destroy=extend_schema(
        parameters=[ORG_SLUG],
        description="Remove a member (admins and program staff): access ends on their next request; their "
        "records stay under their name; their API tokens are revoked when no organization is left to them. The "
        "last admin cannot be removed.",
    ),
)
class MemberViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, OrganizationChildViewSet):
    model = Membership  # tests/test_tenant_gate.py: the id names a membership
    serializer_class = MemberSerializer
    http_method_names = ["get", "patch", "delete", "head", "options"]
    ordering_fields = ["user__username", "role", "created_at"]
    ordering = ["user__username"]

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the schema generator: no organization in the URL
            return Membership.objects.none()
        return people(self.org_access().organization.memberships).select_related("user")

    def partial_update(self, request, *args, **kwargs):
        membership = self.get_object()  # another org's: 404
        services.managing_access(request.user, self.org_access().organization)  # 403 before the body is read
        change = RoleChangeSerializer(data=request.data)
        change.is_valid(raise_exception=True)
        membership = services.change_role(user=request.user, membership=membership, role=change.validated_data["role"])
        return Response(MemberSerializer(membership).data)

    def destroy(self, request, *args, **kwargs):
        membership = self.get_object()
        services.managing_access(request.user, self.org_access().organization)
        services.remove_member(user=request.user, membership=membership)
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema_view(
    list=extend_schema(
        parameters=[ORG_SLUG],
        description="The organization's pending invitations (neither accepted, revoked nor expired), newest first.",
    ),
    retrieve=extend_schema(parameters=[ORG_SLUG]),
    create=extend_schema(
        parameters=[ORG_SLUG],
        description="Invite a person by email with a role (admins and program staff). The address receives a "
        "single-use link that expires after INVITATION_DAYS (default 7); the link is not in the answer.",
    ),
    destroy=extend_schema(
        parameters=[ORG_SLUG],
        description="Revoke a pending invitation: its link no longer works. The row stays, as revoked.",
    ),
)
class InvitationViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, OrganizationChildViewSet
):
    model = Invitation
    serializer_class = InvitationSerializer
    http_method_names = ["get", "post", "delete", "head", "options"]

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the schema generator: no organization in the URL
            return Invitation.objects.none()
        invitations = Invitation.objects.for_org(self.org_access().organization).select_related("invited_by")
        return invitations.pending() if self.action == "list" else invitations

    def create(self, request, *args, **kwargs):
        organization = self.org_access().organization
        services.managing_access(request.user, organization)
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        invitation, _key = services.invite(user=request.user, organization=organization, **serializer.validated_data)
        return Response(InvitationSerializer(invitation).data, status=status.HTTP_201_CREATED)

    def destroy(self, request, *args, **kwargs):
        invitation = self.get_object()
        services.managing_access(request.user, self.org_access().organization)
        services.revoke_invitation(user=request.user, invitation=invitation)
        return Response(status=status.HTTP_204_NO_CONTENT)
