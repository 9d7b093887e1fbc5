"""Filters of the capacity API lists."""

from __future__ import annotations

from django_filters import rest_framework as filters

from tenants.filters import organization_choices
from tenants.models import Allocation, CapacityRequest, Region


class CapacityRequestFilter(filters.FilterSet):
    organization = filters.ModelChoiceFilter(
        field_name="organization", to_field_name="slug", queryset=organization_choices, help_text="Organization slug."
    )
    instance_type = filters.CharFilter(field_name="pool__instance_type__api_name")
    region = filters.ChoiceFilter(field_name="pool__region", choices=Region.choices)

    class Meta:
        model = CapacityRequest
        fields = ["status", "kind", "organization", "instance_type", "region"]


class AllocationFilter(filters.FilterSet):
    organization = filters.ModelChoiceFilter(
        field_name="organization", to_field_name="slug", queryset=organization_choices, help_text="Organization slug."
    )
    instance_type = filters.CharFilter(field_name="pool__instance_type__api_name")
    region = filters.ChoiceFilter(field_name="pool__region", choices=Region.choices)

    class Meta:
        model = Allocation
        fields = ["status", "organization", "instance_type", "region", "pool"]
