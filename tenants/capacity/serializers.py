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
from tenants.capacity import pricing
from tenants.capacity.estimate import MAX_INSTANCES, MAX_PARAMETERS, MAX_TOKENS, PARAMETER_COUNT, TOKEN_COUNT
from tenants.capacity.pools import catalog_prices, request_estimate
from tenants.cycle import IN_CYCLE
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
    program = api.SlugRelatedField(
        slug_field="slug", read_only=True, help_text="Slug of the program (funding cycle) the pool belongs to."
    )
    instance_type = api.SlugRelatedField(
        slug_field="api_name", read_only=True, help_text="The pool's EC2 instance type, e.g. p5.48xlarge."
    )
    allocatable_instances = serializers.IntegerField(
        read_only=True, help_text="Instances that can be allocated: total_instances less spare_instances."
    )
    window = serializers.SerializerMethodField(
        help_text="Free capacity over the window of ?start=&end=; null without them."
    )

    @extend_schema_field(
        {
            "type": "object",
            "nullable": True,
            "properties": {
                "start": {"type": "string", "format": "date", "description": "First day of the window."},
                "end": {"type": "string", "format": "date", "description": "Last day of the window, inclusive."},
                "peak_allocated": {
                    "type": "integer",
                    "description": "Instances allocated on the window's busiest day.",
                },
                "free_instances": {
                    "type": "integer",
                    "description": "Instances free on every day of the window: allocatable_instances less "
                    "peak_allocated; 0 when the window reaches past the pool's own dates.",
                },
                "bottleneck_on": {
                    "type": "string",
                    "format": "date",
                    "description": "The busiest day (the first one, on a tie); the window's first day when nothing "
                    "is allocated.",
                },
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
        extra_kwargs = {
            "region": {"help_text": "AWS region of the pool."},
            "capacity_reservation_id": {
                "help_text": "The EC2 capacity reservation behind the pool (cr-…); empty when none."
            },
            "total_instances": {"help_text": "Instances in the pool, spare ones included."},
            "spare_instances": {"help_text": "Instances held back for node replacements, never allocated."},
            "starts_on": {"help_text": "First day of the pool's capacity."},
            "ends_on": {"help_text": "Last day of the pool's capacity, inclusive."},
        }


PARAMETER_COUNT_HELP = "Model parameters (not billions), at least 1,000,000, e.g. 7000000000."
TRAINING_TOKENS_HELP = "Training tokens; null or left out: 20 × parameter_count."
EXPECTED_MFU_HELP = "Expected model FLOPs utilization, 0.01–1; null or left out: 0.40."
# The estimate once named its inputs and figures parameters, tokens and mfu; capacity requests name them
# parameter_count, training_tokens and expected_mfu, the one vocabulary now. The former names work until 2027-06.
ESTIMATE_FORMER_NAMES = {"parameters": "parameter_count", "tokens": "training_tokens", "mfu": "expected_mfu"}


def _former(name: str, field_class, **kwargs):
    return field_class(
        source=ESTIMATE_FORMER_NAMES[name],
        required=False,
        help_text=f"Deprecated: the former name of {ESTIMATE_FORMER_NAMES[name]}, accepted until 2027-06.",
        **kwargs,
    )


@api.renamed(**ESTIMATE_FORMER_NAMES)
class EstimateSerializer(api.Serializer):
    """Inputs of the compute estimate; the response is the Estimate's fields."""

    parameter_count = serializers.IntegerField(
        max_value=MAX_PARAMETERS, validators=[PARAMETER_COUNT], help_text=PARAMETER_COUNT_HELP
    )
    training_tokens = serializers.IntegerField(
        max_value=MAX_TOKENS, validators=[TOKEN_COUNT], required=False, allow_null=True, help_text=TRAINING_TOKENS_HELP
    )
    expected_mfu = serializers.DecimalField(
        max_digits=4,
        decimal_places=3,
        min_value=Decimal("0.01"),
        max_value=Decimal("1"),
        required=False,
        allow_null=True,
        help_text=EXPECTED_MFU_HELP,
    )
    # The former names take what the new ones take (their values are checked under the new name).
    parameters = _former("parameters", serializers.IntegerField, max_value=MAX_PARAMETERS, validators=[PARAMETER_COUNT])
    tokens = _former(
        "tokens", serializers.IntegerField, allow_null=True, max_value=MAX_TOKENS, validators=[TOKEN_COUNT]
    )
    mfu = _former(
        "mfu",
        serializers.DecimalField,
        max_digits=4,
        decimal_places=3,
        allow_null=True,
        min_value=Decimal("0.01"),
        max_value=Decimal("1"),
    )
    instance_type = api.SlugRelatedField(
        slug_field="api_name",
        queryset=InstanceType.objects.all(),
        help_text="The EC2 instance type to train on, e.g. p5.48xlarge.",
    )
    region = serializers.ChoiceField(
        choices=Region.choices, help_text="AWS region; it must offer the instance type (have a price for it)."
    )
    instance_count = serializers.IntegerField(
        min_value=1, max_value=MAX_INSTANCES, help_text="Instances to train on, around the clock."
    )
    starts_on = serializers.DateField(
        validators=[IN_CYCLE], help_text="First day of the window, within the program's cycle (and its margin)."
    )
    ends_on = serializers.DateField(
        validators=[IN_CYCLE], help_text="Last day of the window, inclusive, within the program's cycle."
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


@api.renamed(**ESTIMATE_FORMER_NAMES)
class EstimateResultSerializer(api.Serializer):
    parameter_count = serializers.IntegerField(help_text="Model parameters the estimate is for.")
    training_tokens = serializers.IntegerField(help_text="Training tokens the estimate is for.")
    tokens_defaulted = serializers.BooleanField(
        help_text="True when no token count was given and training_tokens is 20 × parameter_count (compute-optimal)."
    )
    expected_mfu = serializers.DecimalField(
        max_digits=4, decimal_places=3, help_text="Model FLOPs utilization assumed, 0–1 (0.40 unless given)."
    )
    parameters = _former("parameters", serializers.IntegerField)
    tokens = _former("tokens", serializers.IntegerField)
    mfu = _former("mfu", serializers.DecimalField, max_digits=4, decimal_places=3)
    training_flops = serializers.FloatField(help_text="Training compute, 6 × parameters × tokens, in FLOPs.")
    accelerator_hours = serializers.FloatField(
        help_text="Accelerator-hours the run needs at the accelerator's peak BF16 throughput × mfu."
    )
    instance_hours = serializers.FloatField(
        help_text="Instance-hours the run needs: accelerator_hours ÷ accelerators per instance."
    )
    training_state_gib = serializers.FloatField(
        help_text="Memory the training state takes before activations (16 bytes per parameter), in GiB."
    )
    min_instances_for_state = serializers.IntegerField(
        help_text="Fewest instances whose accelerator memory can hold the training state."
    )
    instance_count = serializers.IntegerField(help_text="Instances the estimate trains on.")
    days_needed = serializers.FloatField(
        help_text="Days the run takes on instance_count instances, running around the clock."
    )
    window_days = serializers.IntegerField(help_text="Days in the window, the first and last included.")
    fits_window = serializers.BooleanField(help_text="True when days_needed is at most window_days.")
    fits_memory = serializers.BooleanField(help_text="True when instance_count is at least min_instances_for_state.")
    fits = serializers.BooleanField(help_text="True when the run fits both the window and the memory.")
    instances_for_window = serializers.IntegerField(
        help_text="Fewest instances that finish the run inside the window and hold its training state."
    )
    cost_usd = serializers.DecimalField(
        max_digits=24,
        decimal_places=2,
        allow_null=True,
        help_text="The run's instance-hours at usd_per_hour (the rate card in force over the window), in USD; null "
        "when nothing prices the instance type in the region.",
    )
    cost_local = serializers.DecimalField(
        max_digits=26,
        decimal_places=0,
        allow_null=True,
        help_text="cost_usd in the program's currency (JPY by default) at the program's exchange rate, in whole "
        "units; null when cost_usd is.",
    )
    window_cost_usd = serializers.DecimalField(
        max_digits=24,
        decimal_places=2,
        allow_null=True,
        help_text="Holding instance_count instances over the whole window at the rate card in force each day, in "
        "USD: what the program will pay for the allocation; null when nothing prices the instance type there.",
    )
    window_cost_local = serializers.DecimalField(
        max_digits=26,
        decimal_places=0,
        allow_null=True,
        help_text="window_cost_usd in the program's currency at its exchange rate, in whole units; null when "
        "window_cost_usd is.",
    )
    usd_per_hour = serializers.DecimalField(
        max_digits=10,
        decimal_places=4,
        allow_null=True,
        help_text="The price of an instance-hour the costs are at: the rate card's rate in force over the window "
        "(its mean over the window's days when it changes), as usage is priced; null when nothing prices it.",
    )
    rate_source = serializers.CharField(
        read_only=True,
        help_text="Which rate usd_per_hour is: negotiated, reserved (capacity block / reservation), on_demand (a "
        "rate-card list price) or catalog (no rate-card entry: the on-demand catalog price); empty when none.",
    )
    rate_effective_from = serializers.DateField(
        allow_null=True,
        help_text="The day the rate-card entry in force on the window's first day took effect; null for the catalog.",
    )
    rate_changes = serializers.BooleanField(help_text="True when another rate takes over within the window.")
    catalog_usd_per_hour = serializers.DecimalField(
        max_digits=10,
        decimal_places=4,
        allow_null=True,
        help_text="The on-demand catalog price, for comparison; null when the region does not offer the type.",
    )
    catalog_cost_usd = serializers.DecimalField(
        max_digits=24,
        decimal_places=2,
        allow_null=True,
        help_text="The run's instance-hours at the catalog price, in USD, beside cost_usd.",
    )
    catalog_window_cost_usd = serializers.DecimalField(
        max_digits=24,
        decimal_places=2,
        allow_null=True,
        help_text="The whole window at the catalog price, in USD, beside window_cost_usd.",
    )


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
    instance_type = api.SlugRelatedField(
        slug_field="api_name",
        queryset=InstanceType.objects.all(),
        required=False,
        help_text="The EC2 instance type asked for, e.g. p5.48xlarge; left out for an extension or enlargement "
        "(the base allocation's).",
    )
    region = serializers.ChoiceField(
        choices=Region.choices,
        required=False,
        help_text="AWS region asked for; left out for an extension or enlargement (the base allocation's).",
    )
    base_allocation = serializers.PrimaryKeyRelatedField(
        queryset=Allocation.objects.none(),
        required=False,
        allow_null=True,
        help_text="Id of the allocation an extension or enlargement changes; null for a new allocation.",
    )
    submit = serializers.BooleanField(write_only=True, default=False, help_text="Submit at once instead of a draft.")
    created_by = api.SlugRelatedField(
        slug_field="username", read_only=True, help_text="Username of the person who created the request."
    )
    decided_by = api.SlugRelatedField(
        slug_field="username",
        read_only=True,
        help_text="Username of the program manager who approved or rejected the request; null before a decision.",
    )
    allocation = serializers.PrimaryKeyRelatedField(
        read_only=True, help_text="Id of the allocation the approval made; null before a grant."
    )
    granted_instance_count = serializers.IntegerField(
        source="granted_count",
        read_only=True,
        allow_null=True,
        help_text="Instances the decision granted (its allocation's); less than instance_count after a partial "
        "approval, null before a grant. The estimate is on what was granted.",
    )
    estimate = serializers.SerializerMethodField(
        help_text="The compute estimate of the training plan, on what was granted once approved, else on what is "
        "asked; null without a parameter_count."
    )

    class Meta:
        model = CapacityRequest
        fields = [
            "id", "organization", "kind", "base_allocation", "instance_type", "region", "instance_count",
            "starts_on", "ends_on", "start_slack_days", "justification", "parameter_count", "training_tokens",
            "framework", "expected_mfu", "submit", "status", "created_by", "created_at", "submitted_at", "decided_by",
            "decided_at", "decision_comment", "allocation", "granted_instance_count", "estimate",
        ]  # fmt: skip
        read_only_fields = [
            "status", "created_at", "submitted_at", "decided_at", "decision_comment",
        ]  # fmt: skip
        extra_kwargs = {
            "kind": {
                "help_text": "new: a new allocation; extension: days after base_allocation ends; enlargement: "
                "instances added inside base_allocation's window."
            },
            "instance_count": {"help_text": "Instances asked for; for an enlargement, the instances to add."},
            "starts_on": {"help_text": "First day asked for."},
            "start_slack_days": {
                "help_text": "How many days later the whole window may start if the pool is full on the days asked "
                "(default 0: none); the window moved by all of it must end inside the pool and the program."
            },
            "ends_on": {"help_text": "Last day asked for, inclusive."},
            "justification": {"help_text": "Why the organization needs the capacity, for the program managers."},
            "parameter_count": {
                "help_text": "Parameters of the model to train (not billions), for the estimate; null when not given."
            },
            "training_tokens": {
                "help_text": "Tokens to train on, for the estimate; null: 20 × parameter_count (compute-optimal)."
            },
            "framework": {"help_text": "The training framework; empty when not given."},
            "expected_mfu": {"help_text": "Expected model FLOPs utilization, 0.01–1, for the estimate; null: 0.40."},
            "status": {
                "help_text": "draft (editable), submitted (awaiting a decision), approved, partially_approved, "
                "rejected or withdrawn."
            },
            "submitted_at": {"help_text": "When the request was submitted; null while a draft."},
            "decided_at": {"help_text": "When the request was approved or rejected; null before a decision."},
            "decision_comment": {"help_text": "The program manager's comment on the decision; empty when none."},
        }

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
            self.context["prices"] = catalog_prices()  # one load for the whole page, not one per row
        if "rates" not in self.context:
            self.context["rates"] = pricing.rates(self.context["prices"])
        result = request_estimate(instance, prices=self.context["prices"], rates=self.context["rates"])
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
    """An Estimate as the API names its figures (one vocabulary with capacity requests)."""
    figures = asdict(result)
    renamed = {new: figures.pop(old) for old, new in ESTIMATE_FORMER_NAMES.items()}
    return {**figures, **renamed, "fits": result.fits, "instances_for_window": result.instances_for_window}


class DecisionSerializer(api.Serializer):
    """Approve in full (no fields), or partially with fewer instances and/or a shorter window."""

    instance_count = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_INSTANCES,
        help_text="Instances to grant, fewer than asked for a partial approval; default: as asked.",
    )
    starts_on = serializers.DateField(
        required=False, validators=[IN_CYCLE], help_text="First day to grant, for a shorter window; default: as asked."
    )
    ends_on = serializers.DateField(
        required=False,
        validators=[IN_CYCLE],
        help_text="Last day to grant, inclusive, for a shorter window; default: as asked.",
    )
    comment = serializers.CharField(
        max_length=FREE_TEXT_MAX,
        required=False,
        allow_blank=True,
        default="",
        help_text="A comment on the decision, for the organization; optional.",
    )


class CommentSerializer(api.Serializer):
    comment = serializers.CharField(
        max_length=FREE_TEXT_MAX,
        allow_blank=False,
        trim_whitespace=True,
        help_text="Why the request is rejected, for the organization.",
    )


class ReasonSerializer(api.Serializer):
    reason = serializers.CharField(
        max_length=FREE_TEXT_MAX,
        allow_blank=False,
        trim_whitespace=True,
        help_text="Why the allocation is revoked, for the organization.",
    )


class AllocationSerializer(api.ModelSerializer):
    organization = api.SlugRelatedField(slug_field="slug", read_only=True)
    instance_type = serializers.CharField(
        source="pool.instance_type.api_name",
        read_only=True,
        help_text="The pool's EC2 instance type, e.g. p5.48xlarge.",
    )
    region = serializers.CharField(source="pool.region", read_only=True, help_text="AWS region of the pool.")
    request = serializers.PrimaryKeyRelatedField(
        read_only=True, help_text="Id of the capacity request the allocation was granted on; null when none."
    )
    revoked_by = api.SlugRelatedField(
        slug_field="username",
        read_only=True,
        help_text="Username of the program manager who revoked the allocation; null unless revoked.",
    )
    instance_hours = serializers.IntegerField(
        read_only=True, help_text="Instance-hours granted: instance_count × days × 24."
    )

    class Meta:
        model = Allocation
        fields = [
            "id", "organization", "pool", "instance_type", "region", "instance_count", "starts_on", "ends_on",
            "instance_hours", "status", "request", "created_at", "revoked_by", "revoked_at", "revoke_reason",
        ]  # fmt: skip
        read_only_fields = fields
        extra_kwargs = {
            "pool": {"help_text": "Id of the capacity pool the instances come from."},
            "instance_count": {"help_text": "Instances granted."},
            "starts_on": {"help_text": "First day of the allocation."},
            "ends_on": {"help_text": "Last day of the allocation, inclusive."},
            "status": {"help_text": "scheduled (not started yet), active, expired (past its last day) or revoked."},
            "revoked_at": {"help_text": "When the allocation was revoked; null unless revoked."},
            "revoke_reason": {"help_text": "Why the allocation was revoked; empty unless revoked."},
        }


class PoolWindowSerializer(api.QuerySerializer):
    start = serializers.DateField(
        required=False, validators=[IN_CYCLE], help_text="First day of a window (with end): adds free capacity."
    )
    end = serializers.DateField(required=False, validators=[IN_CYCLE], help_text="Last day of the window, inclusive.")

    def validate(self, attrs):
        if ("start" in attrs) != ("end" in attrs):
            raise serializers.ValidationError({"end" if "start" in attrs else "start": _("Give both start and end.")})
        if "start" in attrs and attrs["end"] < attrs["start"]:
            raise serializers.ValidationError({"end": _("The end must not be before the start.")})
        return attrs
