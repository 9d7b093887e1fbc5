"""Filters of the capacity API lists."""

from __future__ import annotations

from django_filters import rest_framework as filters

from tenants.models import Allocation, CapacityRequest, Region


class CapacityRequestFilter(filters.FilterSet):
    organization = filters.CharFilter(field_name="organization__slug")
    instance_type = filters.CharFilter(field_name="pool__instance_type__api_name")
    region = filters.ChoiceFilter(field_name="pool__region", choices=Region.choices)

    class Meta:
        model = CapacityRequest
        fields = ["status", "kind", "organization", "instance_type", "region"]


class AllocationFilter(filters.FilterSet):
    organization = filters.CharFilter(field_name="organization__slug")
    instance_type = filters.CharFilter(field_name="pool__instance_type__api_name")
    region = filters.ChoiceFilter(field_name="pool__region", choices=Region.choices)

    class Meta:
        model = Allocation
        fields = ["status", "organization", "instance_type", "region", "pool"]
