"""API shapes of the tenant core: organizations and the instance-type catalog; the organization slug field the
other apps' serializers share. Capacity's serializers are in tenants.capacity.serializers."""

from __future__ import annotations

from rest_framework import serializers

from portal import serializers as api
from tenants.models import InstancePrice, InstanceType, Organization


def request_user(context):
    """The person calling the API (serializers narrow their related fields to what this user may see)."""
    return context["request"].user


class OrganizationSlugField(serializers.CharField):
    """An organization's slug. Resolved by the view through tenants.access (404 when not yours)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        kwargs.setdefault(
            "help_text", "Slug of the organization; may be left out when you belong to exactly one (create only)."
        )
        super().__init__(**kwargs)

    def to_representation(self, value):
        return value.slug


class OrganizationSerializer(api.ModelSerializer):
    lead_engineer = api.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Organization
        fields = [
            "slug",
            "name",
            "aws_account_id",
            "role_arn",
            "lead_engineer",
            "contact_name",
            "contact_email",
            "language",
        ]


class InstancePriceSerializer(api.ModelSerializer):
    class Meta:
        model = InstancePrice
        fields = ["region", "usd_per_hour", "price_date"]


class InstanceTypeSerializer(api.ModelSerializer):
    prices = InstancePriceSerializer(many=True, read_only=True)

    class Meta:
        model = InstanceType
        fields = [
            "api_name",
            "accelerator",
            "accelerators_per_instance",
            "accelerator_memory_gib",
            "peak_bf16_tflops",
            "vcpus",
            "memory_gib",
            "efa_gbps",
            "prices",
        ]
