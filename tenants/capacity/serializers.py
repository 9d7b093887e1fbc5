"""API shapes of capacity: pools with their free capacity, requests (with their estimate), decisions,
allocations and the compute estimate. Serializers parse; tenants.capacity's services decide and write."""

from __future__ import annotations

from dataclasses import asdict
from decimal import Decimal

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from portal import serializers as api
from tenants.access import visible_organizations
from tenants.capacity.estimate import MAX_INSTANCES, MAX_PARAMETERS, MAX_TOKENS, PARAMETER_COUNT, TOKEN_COUNT
from tenants.capacity.pools import catalog_prices, request_estimate
from tenants.models import (
    FREE_TEXT_MAX,
    Allocation,
    CapacityPool,
    CapacityRequest,
    InstancePrice,
    InstanceType,
    Organization,
    Region,
)


class CapacityPoolSerializer(api.ModelSerializer):
    program = api.SlugRelatedField(slug_field="slug", read_only=True)
    instance_type = api.SlugRelatedField(slug_field="api_name", read_only=True)
    allocatable_instances = serializers.IntegerField(read_only=True)
    window = serializers.SerializerMethodField(help_text="Free capacity over ?start=&end=, when given.")

    @extend_schema_field(
        {
            "type": "object",
            "nullable": True,
            "properties": {
                "start": {"type": "string", "format": "date"},
                "end": {"type": "string", "format": "date"},
                "peak_allocated": {"type": "integer"},
                "free_instances": {"type": "integer"},
                "bottleneck_on": {"type": "string", "format": "date"},
            },
        }
    )
    def get_window(self, pool):
        room = self.context.get("headroom", {}).get(pool.pk)
        if room is None:
            return None
        start, end = self.context["window"]
        return {
            "start": start,
            "end": end,
            "peak_allocated": room.peak.used,
            "free_instances": room.free,
            "bottleneck_on": room.peak.on,
        }

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
            "window",
        ]


class EstimateSerializer(api.Serializer):
    """Inputs of the compute estimate; the response is the Estimate's fields."""

    parameters = serializers.IntegerField(
        max_value=MAX_PARAMETERS,
        validators=[PARAMETER_COUNT],
        help_text="Model parameters (not billions), at least 1,000,000, e.g. 7000000000.",
    )
    tokens = serializers.IntegerField(
        max_value=MAX_TOKENS,
        validators=[TOKEN_COUNT],
        required=False,
        allow_null=True,
        help_text="Training tokens; blank = 20 × parameters.",
    )
    instance_type = api.SlugRelatedField(slug_field="api_name", queryset=InstanceType.objects.all())
    region = serializers.ChoiceField(choices=Region.choices)
    instance_count = serializers.IntegerField(min_value=1, max_value=MAX_INSTANCES)
    starts_on = serializers.DateField()
    ends_on = serializers.DateField()
    mfu = serializers.DecimalField(
        max_digits=4,
        decimal_places=3,
        min_value=Decimal("0.01"),
        max_value=Decimal("1"),
        required=False,
        allow_null=True,
        help_text="Expected model FLOPs utilization, 0–1 (default 0.40).",
    )

    def validate(self, attrs):
        if attrs["ends_on"] < attrs["starts_on"]:
            raise serializers.ValidationError({"ends_on": _("The last day must not be before the first day.")})
        instance_type, region = attrs["instance_type"], attrs["region"]
        if not InstancePrice.objects.filter(instance_type=instance_type, region=region).exists():
            # Same rule as a request: no price row means the region does not offer the type.
            raise serializers.ValidationError(
                {"region": _("%(type)s is not offered in %(region)s.") % {"type": instance_type, "region": region}}
            )
        return attrs


class EstimateResultSerializer(api.Serializer):
    parameters = serializers.IntegerField()
    tokens = serializers.IntegerField()
    tokens_defaulted = serializers.BooleanField()
    mfu = serializers.DecimalField(max_digits=4, decimal_places=3)
    training_flops = serializers.FloatField()
    accelerator_hours = serializers.FloatField()
    instance_hours = serializers.FloatField()
    training_state_gib = serializers.FloatField()
    min_instances_for_state = serializers.IntegerField()
    instance_count = serializers.IntegerField()
    days_needed = serializers.FloatField()
    window_days = serializers.IntegerField()
    fits_window = serializers.BooleanField()
    fits_memory = serializers.BooleanField()
    fits = serializers.BooleanField()
    cost_usd = serializers.DecimalField(max_digits=24, decimal_places=2, allow_null=True)
    cost_local = serializers.DecimalField(max_digits=26, decimal_places=0, allow_null=True)
    window_cost_usd = serializers.DecimalField(max_digits=24, decimal_places=2, allow_null=True)
    window_cost_local = serializers.DecimalField(max_digits=26, decimal_places=0, allow_null=True)


class CapacityRequestSerializer(api.ModelSerializer):
    read_only_messages = {  # a client that tries to set the status is told how (portal.serializers)
        "status": _("The status changes through the submit and withdraw actions, or a program manager's decision.")
    }
    organization = api.SlugRelatedField(
        slug_field="slug",
        queryset=Organization.objects.none(),  # narrowed to the caller's organizations in __init__
        required=False,
        help_text="Slug of your organization; may be left out when you belong to exactly one.",
    )
    instance_type = api.SlugRelatedField(slug_field="api_name", queryset=InstanceType.objects.all(), required=False)
    region = serializers.ChoiceField(choices=Region.choices, required=False)
    base_allocation = serializers.PrimaryKeyRelatedField(
        queryset=Allocation.objects.none(), required=False, allow_null=True
    )
    submit = serializers.BooleanField(write_only=True, default=False, help_text="Submit at once instead of a draft.")
    created_by = api.SlugRelatedField(slug_field="username", read_only=True)
    decided_by = api.SlugRelatedField(slug_field="username", read_only=True)
    allocation = serializers.PrimaryKeyRelatedField(read_only=True)
    granted_instance_count = serializers.IntegerField(
        source="granted_count",
        read_only=True,
        allow_null=True,
        help_text="Instances the decision granted (its allocation's); less than instance_count after a partial "
        "approval, null before a grant. The estimate is on what was granted.",
    )
    estimate = serializers.SerializerMethodField()

    class Meta:
        model = CapacityRequest
        fields = [
            "id", "organization", "kind", "base_allocation", "instance_type", "region", "instance_count",
            "starts_on", "ends_on", "justification", "parameter_count", "training_tokens", "framework",
            "expected_mfu", "submit", "status", "created_by", "created_at", "submitted_at", "decided_by",
            "decided_at", "decision_comment", "allocation", "granted_instance_count", "estimate",
        ]  # fmt: skip
        read_only_fields = [
            "status", "created_at", "submitted_at", "decided_at", "decision_comment",
        ]  # fmt: skip

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        request = self.context.get("request")
        if request is not None and request.user.is_authenticated:
            # Related fields only ever resolve to the caller's own rows: another org's id is "does not exist".
            self.fields["organization"].queryset = visible_organizations(request.user)
            self.fields["base_allocation"].queryset = Allocation.objects.visible_to(request.user)

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data["instance_type"] = instance.pool.instance_type.api_name
        data["region"] = instance.pool.region
        return data

    @extend_schema_field(EstimateResultSerializer(allow_null=True))
    def get_estimate(self, instance):
        if "prices" not in self.context:
            self.context["prices"] = catalog_prices()  # one query for the whole page, not one per row
        result = request_estimate(instance, prices=self.context["prices"])
        return None if result is None else EstimateResultSerializer(estimate_as_dict(result)).data

    def validate(self, attrs):
        errors = {}
        if self.instance is not None:  # an edit rewrites the plan; whose request it is and what it changes stay
            for field in ("organization", "base_allocation"):
                if field in attrs and attrs[field] != getattr(self.instance, field):
                    errors[field] = _("This cannot change once the request exists.")
        elif attrs.get("base_allocation") is None:
            for field in sorted({"instance_type", "region"} - set(attrs)):
                errors[field] = _("This field is required.")
        if attrs.get("starts_on") and attrs.get("ends_on") and attrs["ends_on"] < attrs["starts_on"]:
            errors["ends_on"] = _("The last day must not be before the first day.")
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


def estimate_as_dict(result) -> dict:
    return {**asdict(result), "fits": result.fits}


class DecisionSerializer(api.Serializer):
    """Approve in full (no fields), or partially with fewer instances and/or a shorter window."""

    instance_count = serializers.IntegerField(required=False, min_value=1, max_value=MAX_INSTANCES)
    starts_on = serializers.DateField(required=False)
    ends_on = serializers.DateField(required=False)
    comment = serializers.CharField(max_length=FREE_TEXT_MAX, required=False, allow_blank=True, default="")


class CommentSerializer(api.Serializer):
    comment = serializers.CharField(max_length=FREE_TEXT_MAX, allow_blank=False, trim_whitespace=True)


class ReasonSerializer(api.Serializer):
    reason = serializers.CharField(max_length=FREE_TEXT_MAX, allow_blank=False, trim_whitespace=True)


class AllocationSerializer(api.ModelSerializer):
    organization = api.SlugRelatedField(slug_field="slug", read_only=True)
    instance_type = serializers.CharField(source="pool.instance_type.api_name", read_only=True)
    region = serializers.CharField(source="pool.region", read_only=True)
    request = serializers.PrimaryKeyRelatedField(read_only=True)
    revoked_by = api.SlugRelatedField(slug_field="username", read_only=True)
    instance_hours = serializers.IntegerField(read_only=True)

    class Meta:
        model = Allocation
        fields = [
            "id", "organization", "pool", "instance_type", "region", "instance_count", "starts_on", "ends_on",
            "instance_hours", "status", "request", "created_at", "revoked_by", "revoked_at", "revoke_reason",
        ]  # fmt: skip
        read_only_fields = fields


class PoolWindowSerializer(serializers.Serializer):
    start = serializers.DateField(required=False)
    end = serializers.DateField(required=False)

    def validate(self, attrs):
        if ("start" in attrs) != ("end" in attrs):
            raise serializers.ValidationError({"end" if "start" in attrs else "start": _("Give both start and end.")})
        if "start" in attrs and attrs["end"] < attrs["start"]:
            raise serializers.ValidationError({"end": _("The end must not be before the start.")})
        return attrs
