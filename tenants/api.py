"""API of the tenant core: organizations, the instance-type catalog, and the scoped base every tenant-data
viewset derives from (the one gate for the API)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db.models import Prefetch
from django.utils.translation import gettext as _
from rest_framework import permissions, viewsets

from tenants.access import get_org_access_or_404, require_writer, visible_organizations
from tenants.models import InstancePrice, InstanceType, Organization
from tenants.serializers import InstanceTypeSerializer, OrganizationSerializer


class OrganizationViewSet(viewsets.ReadOnlyModelViewSet):
    """Organizations the caller may see: its own, or every one for program staff."""

    serializer_class = OrganizationSerializer
    lookup_field = "slug"
    lookup_url_kwarg = "org_slug"
    ordering_fields = ["name", "slug"]

    def get_queryset(self):
        return visible_organizations(self.request.user).select_related("lead_engineer").order_by("name")


class InstanceTypeViewSet(viewsets.ReadOnlyModelViewSet):
    """The accelerator catalog with on-demand prices per region (program-wide, not tenant data)."""

    serializer_class = InstanceTypeSerializer
    lookup_field = "api_name"
    lookup_value_regex = r"[a-z0-9.\-]+"
    queryset = InstanceType.objects.prefetch_related(
        Prefetch("prices", queryset=InstancePrice.objects.order_by("region"))
    ).order_by("api_name")


class WritesByRole(permissions.IsAuthenticated):
    """Reads for anyone signed in (the queryset scopes them); a write needs a role that writes in the object's
    organization (tenants.access.OrgAccess.can_write): a viewer gets a 403 saying so, before the body is read.
    What else a write needs (a member to request capacity, a program manager to approve) the services check."""

    def has_permission(self, request, view) -> bool:
        if not super().has_permission(request, view):
            return False
        if request.method not in permissions.SAFE_METHODS:
            require_writer(request.user)
        return True

    def has_object_permission(self, request, view, obj) -> bool:
        if request.method not in permissions.SAFE_METHODS:
            access = get_org_access_or_404(request.user, obj.organization.slug)
            access.require(access.can_write, _("You cannot change this organization's records."))
        return True


class TenantScopedViewSet(viewsets.GenericViewSet):
    """Base for API views of tenant-owned rows: the queryset is always `model.objects.visible_to(user)`,
    so another organization's row is a 404 in lists, details and actions alike."""

    model = None  # subclasses set it (tests/test_tenant_gate.py reads it too)
    permission_classes = [WritesByRole]

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # The one gate (PostHog's guard): a subclass that widens the queryset would leak tenants' rows.
        if "get_queryset" in cls.__dict__:
            raise TypeError(f"{cls.__name__} must not override get_queryset; use scope_queryset().")

    def get_queryset(self):
        return self.scope_queryset(self.model.objects.visible_to(self.request.user))

    def scope_queryset(self, queryset):
        """Subclasses add select_related / filters here; they can only narrow."""
        return queryset


def organization_for_create(user, organization) -> Organization:
    """The org a new row belongs to: the one named, or the caller's only org."""
    if organization is not None:
        return organization
    organizations = list(visible_organizations(user)[:2])
    if len(organizations) != 1:
        raise ValidationError({"organization": _("Name the organization (its slug).")})
    return organizations[0]


def organization_for_write(user, slug: str | None) -> Organization:
    """The organization a new row goes to: the slug given (404 when it is not one of yours), or the
    caller's only organization (400 when there is no single one)."""
    if slug:
        return get_org_access_or_404(user, slug).organization
    return organization_for_create(user, None)
