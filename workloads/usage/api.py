"""REST API of usage: the daily rollups summed per day, ISO week or month (a tenant gets only its own
organization), and the rate card (everyone reads it; program managers add and remove rates)."""

from __future__ import annotations

from datetime import date, datetime, timedelta

from django.db.models import F, Sum
from django.db.models.functions import TruncMonth, TruncWeek
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from portal.schema import errors
from tenants.access import visible_organizations
from tenants.api import TenantScopedViewSet
from workloads.usage.definitions import usd, utilization
from workloads.usage.formats import hours_value, percent_value
from workloads.usage.models import RateCardEntry, UsageDay
from workloads.usage.rates import add_rate, remove_rate
from workloads.usage.serializers import RateCardEntrySerializer, UsageQuerySerializer, UsageRowSerializer

ORDERINGS = {
    "period": ("period", "organization__slug", "pool__instance_type__api_name", "pool__region"),
    "organization": ("organization__slug", "period", "pool__instance_type__api_name", "pool__region"),
    "running": ("running", "period", "organization__slug"),
    "allocated": ("allocated", "period", "organization__slug"),
}


def _period_end(start: date, granularity: str) -> date:
    if granularity == "week":
        return start + timedelta(days=6)
    if granularity == "month":
        return (start.replace(day=28) + timedelta(days=4)).replace(day=1) - timedelta(days=1)
    return start


@extend_schema_view(
    list=extend_schema(
        summary="Usage and cost per organization, instance type and region, by day, ISO week or month",
        parameters=[UsageQuerySerializer],
        responses=UsageRowSerializer(many=True),
        filters=False,
    )
)
class UsageViewSet(TenantScopedViewSet):
    """Allocated against running instance-hours, accelerator-hours and cost, summed from the daily rollups.
    `?ordering=` takes period (default), organization, running or allocated (a leading - reverses)."""

    model = UsageDay
    filter_backends: list = []

    def list(self, request, *args, **kwargs):
        query = UsageQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        rows = self.get_queryset().filter(day__gte=params["start"], day__lte=params["end"])
        if slug := params.get("organization"):
            # Another organization's slug is "not one you can see", exactly like one that does not exist.
            if not visible_organizations(request.user).filter(slug=slug).exists():
                raise ValidationError({"organization": [_("You have no organization with this slug.")]})
            rows = rows.filter(organization__slug=slug)
        if params.get("instance_type"):
            rows = rows.filter(pool__instance_type=params["instance_type"])
        if params.get("region"):
            rows = rows.filter(pool__region=params["region"])
        granularity = params["granularity"]
        period = {"day": F("day"), "week": TruncWeek("day"), "month": TruncMonth("day")}[granularity]
        key = request.query_params.get("ordering", "period")
        if key.removeprefix("-") not in ORDERINGS:
            raise ValidationError({"ordering": [_("Order by period, organization, running or allocated.")]})
        ordering = ORDERINGS[key.removeprefix("-")]
        if key.startswith("-"):
            ordering = (f"-{ordering[0]}", *ordering[1:])
        grouped = (
            rows.annotate(period=period)
            .values(
                "period",
                "organization__slug",
                "pool__instance_type__api_name",
                "pool__region",
                accelerators=F("pool__instance_type__accelerators_per_instance"),
            )
            .annotate(
                allocated=Sum("allocated_microseconds"),
                running=Sum("running_microseconds"),
                busy=Sum("busy_accelerator_microseconds"),
                allocated_cost=Sum("allocated_cost_micro_usd"),
                running_cost=Sum("running_cost_micro_usd"),
            )
            .order_by(*ordering)
        )
        page = self.paginate_queryset(grouped)
        return self.get_paginated_response(
            UsageRowSerializer([self._row(r, granularity) for r in page], many=True).data
        )

    @staticmethod
    def _row(row: dict, granularity: str) -> dict:
        start = row["period"].date() if isinstance(row["period"], datetime) else row["period"]
        per_instance = row["accelerators"]
        return {
            "organization": row["organization__slug"],
            "instance_type": row["pool__instance_type__api_name"],
            "region": row["pool__region"],
            "granularity": granularity,
            "period_start": start,
            "period_end": _period_end(start, granularity),
            "allocated_instance_hours": hours_value(row["allocated"]),
            "running_instance_hours": hours_value(row["running"]),
            "utilization_percent": percent_value(utilization(row["running"], row["allocated"])),
            "allocated_accelerator_hours": hours_value(row["allocated"] * per_instance),
            "running_accelerator_hours": hours_value(row["running"] * per_instance),
            "busy_accelerator_hours": hours_value(row["busy"]),
            "allocated_cost_usd": usd(row["allocated_cost"]),
            "running_cost_usd": usd(row["running_cost"]),
            "idle_cost_usd": usd(max(row["allocated_cost"] - row["running_cost"], 0)),
        }


@extend_schema_view(
    list=extend_schema(summary="The rate card: USD per instance-hour by type, region and kind, from a day on"),
    create=extend_schema(summary="Add a rate (program managers); the days it covers are re-priced"),
    destroy=extend_schema(summary="Remove a rate (program managers); the days it covered are re-priced"),
)
class RateCardViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Program-wide pricing, not tenant data: everyone signed in reads it."""

    serializer_class = RateCardEntrySerializer
    queryset = RateCardEntry.objects.select_related("instance_type", "created_by")
    ordering_fields = ["effective_from", "usd_per_hour"]
    filterset_fields = ["region", "kind"]

    def create(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        entry = add_rate(user=request.user, **serializer.validated_data)
        return Response(self.get_serializer(entry).data, status=status.HTTP_201_CREATED)

    @errors({400: None})  # any entry may go: the days it covered are priced again
    def destroy(self, request, *args, **kwargs):
        remove_rate(user=request.user, entry=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)
