from django.db.models import Prefetch
from rest_framework import viewsets

from tenants.access import visible_organizations
from tenants.models import CapacityPool, InstancePrice, InstanceType
from tenants.serializers import CapacityPoolSerializer, InstanceTypeSerializer, OrganizationSerializer


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


class CapacityPoolViewSet(viewsets.ReadOnlyModelViewSet):
    """The program's capacity pools (program-wide, not tenant data)."""

    serializer_class = CapacityPoolSerializer
    queryset = CapacityPool.objects.select_related("program", "instance_type").order_by(
        "program", "instance_type__api_name", "region"
    )
    filterset_fields = ["region", "instance_type__api_name", "program__slug"]
    ordering_fields = ["region", "total_instances"]
