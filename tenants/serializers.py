from rest_framework import serializers

from tenants.models import CapacityPool, InstancePrice, InstanceType, Organization


class OrganizationSerializer(serializers.ModelSerializer):
    lead_engineer = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Organization
        fields = ["slug", "name", "aws_account_id", "role_arn", "lead_engineer", "contact_name", "contact_email"]


class InstancePriceSerializer(serializers.ModelSerializer):
    class Meta:
        model = InstancePrice
        fields = ["region", "usd_per_hour", "price_date"]


class InstanceTypeSerializer(serializers.ModelSerializer):
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


class CapacityPoolSerializer(serializers.ModelSerializer):
    program = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    instance_type = serializers.SlugRelatedField(slug_field="api_name", read_only=True)
    allocatable_instances = serializers.IntegerField(read_only=True)

    class Meta:
        model = CapacityPool
        fields = [
            "id",
            "program",
            "instance_type",
            "region",
            "capacity_reservation_id",
            "total_instances",
            "spare_instances",
            "allocatable_instances",
            "starts_on",
            "ends_on",
        ]
