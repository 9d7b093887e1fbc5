"""API shapes of usage: the query of /api/v1/usage/, its rows, and the rate card."""

from __future__ import annotations

from datetime import timedelta

from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from portal import serializers as api
from portal.periods import today
from tenants.cycle import IN_CYCLE
from tenants.models import InstanceType, Region
from tenants.serializers import SLUG_MAX
from workloads.usage.models import RateCardEntry
from workloads.usage.periods import MAX_DAYS
from workloads.usage.rates import MAX_USD_PER_HOUR, RATE_CEILING, RATE_DIGITS

GRANULARITIES = [("day", _("day")), ("week", _("ISO week")), ("month", _("month"))]


class UsageQuerySerializer(api.QuerySerializer):
    """Query parameters of the usage list. A tenant names only its own organization (another's slug is
    answered like one that does not exist)."""

    organization = serializers.SlugField(
        required=False, max_length=SLUG_MAX, help_text="Slug of an organization you can see."
    )
    instance_type = api.SlugRelatedField(
        slug_field="api_name", queryset=InstanceType.objects.all(), required=False, help_text="e.g. p5.48xlarge"
    )
    region = serializers.ChoiceField(choices=Region.choices, required=False, help_text="Only this AWS region.")
    granularity = serializers.ChoiceField(
        choices=GRANULARITIES, default="day", help_text="The period of each row: day (default), week or month."
    )
    start = serializers.DateField(
        required=False,
        validators=[IN_CYCLE],
        help_text="First day (program time), within the program's cycle and its margin; default: 30 days ago.",
    )
    end = serializers.DateField(required=False, validators=[IN_CYCLE], help_text="Last day, inclusive; default: today.")

    def validate(self, attrs):
        end = attrs.setdefault("end", today())
        start = attrs.setdefault("start", end - timedelta(days=29))
        if end < start:
            raise serializers.ValidationError({"end": _("The end must not be before the start.")})
        if (end - start).days + 1 > MAX_DAYS:
            raise serializers.ValidationError({"end": _("Choose a range of at most three years.")})
        return attrs


def _hours(help_text: str, *, null: bool = False) -> serializers.DecimalField:
    """Instance- or accelerator-hours as every usage row reads them: exact, to four decimals (a ten-thousandth of
    an hour, the grain daily rows are kept to: workloads.usage.definitions), so rows add up to any total."""
    return serializers.DecimalField(
        read_only=True, max_digits=24, decimal_places=4, allow_null=null, help_text=f"{help_text} Exact, to 0.0001 h."
    )


def _usd(help_text: str, *, null: bool = False) -> serializers.DecimalField:
    """US dollars as every usage row reads them: exact, to the cent (daily rows are kept to the cent)."""
    return serializers.DecimalField(
        read_only=True, max_digits=20, decimal_places=2, allow_null=null, help_text=help_text
    )


class UsageRowSerializer(api.Serializer):
    organization = serializers.CharField(read_only=True, help_text="Slug of the organization the row counts.")
    instance_type = serializers.CharField(read_only=True, help_text="EC2 instance type of the pool, e.g. p5.48xlarge.")
    region = serializers.CharField(read_only=True, help_text="AWS region of the pool.")
    granularity = serializers.CharField(read_only=True, help_text="The period the row covers: day, week or month.")
    period_start = serializers.DateField(
        read_only=True, help_text="The day, or the first day of the week (Monday) or month."
    )
    period_end = serializers.DateField(read_only=True, help_text="The last day covered, inclusive.")
    allocated_instance_hours = _hours("Instance-hours the organization's allocations of the pool held in the period.")
    running_instance_hours = _hours(
        "Instance-hours the organization's nodes of the pool's type and region ran in the period."
    )
    utilization_percent = serializers.DecimalField(
        read_only=True,
        max_digits=7,
        decimal_places=1,
        allow_null=True,
        help_text="Running ÷ allocated instance-hours, in percent; null when nothing was allocated.",
    )
    allocated_accelerator_hours = _hours("allocated_instance_hours × accelerators per instance.")
    running_accelerator_hours = _hours("running_instance_hours × accelerators per instance.")
    busy_accelerator_hours = _hours(
        "Accelerator-hours scheduler jobs held (never more than running); null when the organization's "
        "clusters never reported a job.",
        null=True,
    )
    allocated_cost_usd = _usd("The allocated instance-hours at the rate card's prices, in USD.")
    running_cost_usd = _usd("The running instance-hours at the rate card's prices, in USD.")
    idle_instance_hours = _hours(
        "Per day, allocated less running instance-hours, never below 0, summed over the period's days."
    )
    idle_cost_usd = _usd(
        "Per day, allocated less running cost, never below 0, summed over the period's days, in USD: the "
        "same figure as the usage pages and CSV."
    )
    over_allocation_instance_hours = _hours(
        "Per day, running beyond the allocation (running less allocated, never below 0), summed; never "
        "netted against idle hours."
    )
    over_allocation_cost_usd = _usd("The over-allocation instance-hours at the rate card's prices, in USD.")
    billed_through = serializers.DateField(
        read_only=True,
        allow_null=True,
        help_text="The last day of the row's period Cost Explorer has settled; null when none is settled yet.",
    )
    billed_cost_usd = _usd(
        "What AWS billed the organization's account for the instance type (all regions) from the period's "
        "start to billed_through, in USD; null when nothing is billed.",
        null=True,
    )
    billed_computed_cost_usd = _usd(
        "The running cost computed over the same settled days, to compare with billed_cost_usd; null when "
        "no day is settled.",
        null=True,
    )


class RateCardEntrySerializer(api.ModelSerializer):
    instance_type = api.SlugRelatedField(
        slug_field="api_name",
        queryset=InstanceType.objects.all(),
        help_text="The EC2 instance type the rate is for, e.g. p5.48xlarge.",
    )
    created_by = api.SlugRelatedField(
        slug_field="username",
        read_only=True,
        help_text="Username of the program manager who added the entry; null when none is recorded (an entry "
        "loaded by a command).",
    )

    class Meta:
        model = RateCardEntry
        fields = ["id", "instance_type", "region", "kind", "usd_per_hour", "effective_from", "note", "created_by",
                  "created_at"]  # fmt: skip
        read_only_fields = ["created_by", "created_at"]
        extra_kwargs = {
            "region": {"help_text": "AWS region the rate is for."},
            "kind": {
                "help_text": "negotiated, reserved (capacity block / reservation) or on_demand (list price); where "
                "kinds overlap, negotiated beats reserved beats on_demand."
            },
            "usd_per_hour": {
                "max_value": MAX_USD_PER_HOUR,
                "max_digits": RATE_DIGITS + 4,  # the schema's pattern: at most three digits before the point
                "help_text": f"Price of one instance-hour, in USD: at most {RATE_CEILING} times the type's on-demand "
                f"list price in the region, and never over {MAX_USD_PER_HOUR}.",
            },
            "effective_from": {
                "help_text": "First day the rate applies; it applies until the next entry of the same type, region "
                "and kind."
            },
            "note": {"help_text": "Where the rate comes from (a contract, a reservation…); empty when none."},
        }
        validators = []  # the service words the duplicate-day rule per field
