"""API shapes of usage: the query of /api/v1/usage/, its rows, and the rate card."""

from __future__ import annotations

from datetime import timedelta

from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from portal import serializers as api
from portal.periods import today
from tenants.models import InstanceType, Region
from workloads.usage.models import RateCardEntry
from workloads.usage.periods import MAX_DAYS

GRANULARITIES = [("day", _("day")), ("week", _("ISO week")), ("month", _("month"))]


class UsageQuerySerializer(serializers.Serializer):
    """Query parameters of the usage list. A tenant names only its own organization (another's slug is
    answered like one that does not exist)."""

    organization = serializers.SlugField(required=False, help_text="Slug of an organization you can see.")
    instance_type = api.SlugRelatedField(
        slug_field="api_name", queryset=InstanceType.objects.all(), required=False, help_text="e.g. p5.48xlarge"
    )
    region = serializers.ChoiceField(choices=Region.choices, required=False)
    granularity = serializers.ChoiceField(choices=GRANULARITIES, default="day")
    start = serializers.DateField(required=False, help_text="First day (program time); default: 30 days ago.")
    end = serializers.DateField(required=False, help_text="Last day, inclusive; default: today.")

    def validate(self, attrs):
        end = attrs.setdefault("end", today())
        start = attrs.setdefault("start", end - timedelta(days=29))
        if end < start:
            raise serializers.ValidationError({"end": _("The end must not be before the start.")})
        if (end - start).days + 1 > MAX_DAYS:
            raise serializers.ValidationError({"end": _("Choose a range of at most three years.")})
        return attrs


class UsageRowSerializer(api.Serializer):
    organization = serializers.CharField(read_only=True, help_text="Organization slug.")
    instance_type = serializers.CharField(read_only=True)
    region = serializers.CharField(read_only=True)
    granularity = serializers.CharField(read_only=True)
    period_start = serializers.DateField(
        read_only=True, help_text="The day, or the first day of the week (Monday) or month."
    )
    period_end = serializers.DateField(read_only=True, help_text="The last day covered, inclusive.")
    allocated_instance_hours = serializers.DecimalField(read_only=True, max_digits=20, decimal_places=1)
    running_instance_hours = serializers.DecimalField(read_only=True, max_digits=20, decimal_places=1)
    utilization_percent = serializers.DecimalField(
        read_only=True,
        max_digits=7,
        decimal_places=1,
        allow_null=True,
        help_text="Running ÷ allocated; null when nothing allocated.",
    )
    allocated_accelerator_hours = serializers.DecimalField(read_only=True, max_digits=20, decimal_places=1)
    running_accelerator_hours = serializers.DecimalField(read_only=True, max_digits=20, decimal_places=1)
    busy_accelerator_hours = serializers.DecimalField(
        read_only=True,
        max_digits=20,
        decimal_places=1,
        allow_null=True,
        help_text="From scheduler jobs; null until reported.",
    )
    allocated_cost_usd = serializers.DecimalField(read_only=True, max_digits=20, decimal_places=2)
    running_cost_usd = serializers.DecimalField(read_only=True, max_digits=20, decimal_places=2)
    idle_cost_usd = serializers.DecimalField(read_only=True, max_digits=20, decimal_places=2)


class RateCardEntrySerializer(api.ModelSerializer):
    instance_type = api.SlugRelatedField(slug_field="api_name", queryset=InstanceType.objects.all())
    created_by = api.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = RateCardEntry
        fields = ["id", "instance_type", "region", "kind", "usd_per_hour", "effective_from", "note", "created_by",
                  "created_at"]  # fmt: skip
        read_only_fields = ["created_by", "created_at"]
        validators = []  # the service words the duplicate-day rule per field
