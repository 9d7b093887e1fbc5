"""API shapes of the tenant core: organizations and the instance-type catalog; the organization slug field the
other apps' serializers share. Capacity's serializers are in tenants.capacity.serializers."""

from __future__ import annotations

from rest_framework import serializers

from portal import serializers as api
from tenants.models import InstancePrice, InstanceType, Organization


def request_user(context):
    """The person calling the API (serializers narrow their related fields to what this user may see)."""
    return context["request"].user


SLUG_MAX = Organization._meta.get_field("slug").max_length  # a longer slug names no organization: a 400


class OrganizationSlugField(serializers.CharField):
    """An organization's slug. Resolved by the view through tenants.access (404 when not yours)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        kwargs.setdefault("max_length", SLUG_MAX)
        kwargs.setdefault(
            "help_text", "Slug of the organization; may be left out when you belong to exactly one (create only)."
        )
        super().__init__(**kwargs)

    def to_representation(self, value):
        return value.slug


class OrganizationSerializer(api.ModelSerializer):
    lead_engineer = api.SlugRelatedField(
        slug_field="username",
        read_only=True,
        help_text="Username of the program's lead support engineer for the organization; null when none.",
    )

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
        extra_kwargs = {
            "slug": {"help_text": "The organization's short name in URLs, and its value in `organization` fields."},
            "name": {"help_text": "The organization's full name."},
            "aws_account_id": {"help_text": "The 12-digit AWS account the organization trains in; empty until linked."},
            "role_arn": {
                "help_text": "ARN of the IAM role in that account the portal assumes to manage the organization's "
                "clusters; empty until linked."
            },
            "contact_name": {"help_text": "Name of the organization's contact person; empty when none."},
            "contact_email": {"help_text": "Email address of the organization's contact person; empty when none."},
        }


class InstancePriceSerializer(api.ModelSerializer):
    class Meta:
        model = InstancePrice
        fields = ["region", "usd_per_hour", "price_date"]
        extra_kwargs = {
            "region": {"help_text": "AWS region the price is for."},
            "usd_per_hour": {"help_text": "On-demand price of one instance for one hour, in USD."},
            "price_date": {"help_text": "The day the price was read from AWS's price list."},
        }


class InstanceTypeSerializer(api.ModelSerializer):
    prices = InstancePriceSerializer(
        many=True,
        read_only=True,
        help_text="On-demand price per region; a region without a price does not offer the type.",
    )

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
        extra_kwargs = {
            "api_name": {"help_text": "The EC2 instance type's name, e.g. p5.48xlarge."},
            "accelerator": {"help_text": "The accelerator the instance carries, e.g. NVIDIA H100 80 GB."},
            "accelerators_per_instance": {"help_text": "Accelerators (GPUs or Trainium chips) per instance."},
            "accelerator_memory_gib": {"help_text": "Memory of one accelerator, in GiB."},
            "peak_bf16_tflops": {"help_text": "Peak dense BF16 throughput of one accelerator, in TFLOPS."},
            "vcpus": {"help_text": "vCPUs per instance."},
            "memory_gib": {"help_text": "Host memory per instance, in GiB."},
            "efa_gbps": {"help_text": "EFA network bandwidth per instance, in Gbps."},
        }
