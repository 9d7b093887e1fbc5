"""REST API of usage: the daily rollups summed per day, ISO week or month (a tenant gets only its own
organization), and the rate card (everyone reads it; program managers add and remove rates)."""

from __future__ import annotations

from datetime import date, datetime, timedelta

from django.db.models import F, Q, Sum
from django.db.models.functions import TruncMonth, TruncWeek
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from portal.schema import errors
from tenants.access import require_program_manager, visible_organizations
from tenants.api import TenantScopedViewSet
from workloads.usage.billed import billed_settled_through
from workloads.usage.definitions import ROW_SUMS, usd, utilization
from workloads.usage.formats import hours_value, percent_value
from workloads.usage.models import BilledCost, RateCardEntry, UsageDay
from workloads.usage.periods import Period
from workloads.usage.rates import MANAGERS_ONLY, add_rate, remove_rate
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
        # Billed and computed are compared over the days Cost Explorer has settled only (billed.billed_settled).
        through = billed_settled_through(Period("range", params["start"], params["end"]))
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
                **ROW_SUMS,
                settled_running_cost=Sum("running_cost_micro_usd", filter=Q(day__lte=through or date.min)),
            )
            .order_by(*ordering)
        )
        page = self.paginate_queryset(grouped)
        billed = self._billed(
            BilledCost.objects.visible_to(request.user), page, period, first=params["start"], through=through
        )
        return self.get_paginated_response(
            UsageRowSerializer([self._row(r, granularity, billed, through) for r in page], many=True).data
        )

    @staticmethod
    def _billed(billed, page: list[dict], period, *, first: date, through: date | None) -> dict[tuple, int]:
        """What Cost Explorer billed for the page's organizations, types and periods over the settled days, one
        query: {(period start, organization slug, instance type): micro-USD}."""
        if through is None or not page:
            return {}
        rows = (
            billed.filter(
                organization__slug__in={r["organization__slug"] for r in page},
                instance_type__in={r["pool__instance_type__api_name"] for r in page},
                day__gte=first,
                day__lte=through,
            )
            .annotate(period=period)
            .values("period", "organization__slug", "instance_type")
            .annotate(total=Sum("cost_micro_usd"))
        )
        return {(_start(r["period"]), r["organization__slug"], r["instance_type"]): r["total"] for r in rows}

    @staticmethod
    def _row(row: dict, granularity: str, billed: dict[tuple, int], through: date | None) -> dict:
        start = _start(row["period"])
        per_instance = row["accelerators"]
        end = _period_end(start, granularity)
        settled = through is not None and through >= start
        billed_cost = billed.get((start, row["organization__slug"], row["pool__instance_type__api_name"]))
        return {
            "organization": row["organization__slug"],
            "instance_type": row["pool__instance_type__api_name"],
            "region": row["pool__region"],
            "granularity": granularity,
            "period_start": start,
            "period_end": end,
            "allocated_instance_hours": hours_value(row["allocated"]),
            "running_instance_hours": hours_value(row["running"]),
            "utilization_percent": percent_value(utilization(row["running"], row["allocated"])),
            "allocated_accelerator_hours": hours_value(row["allocated"] * per_instance),
            "running_accelerator_hours": hours_value(row["running"] * per_instance),
            "busy_accelerator_hours": hours_value(row["busy"]),
            "allocated_cost_usd": usd(row["allocated_cost"]),
            "running_cost_usd": usd(row["running_cost"]),
            "idle_instance_hours": hours_value(row["idle"]),
            "idle_cost_usd": usd(row["idle_cost"]),
            "over_allocation_instance_hours": hours_value(row["over_allocation"]),
            "over_allocation_cost_usd": usd(row["over_allocation_cost"]),
            "billed_through": min(through, end) if settled else None,
            "billed_cost_usd": usd(billed_cost) if settled and billed_cost is not None else None,
            "billed_computed_cost_usd": usd(row["settled_running_cost"] or 0) if settled else None,
        }


def _start(value) -> date:
    return value.date() if isinstance(value, datetime) else value


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
        require_program_manager(request.user, MANAGERS_ONLY)  # a 403 before the body is read
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        entry = add_rate(user=request.user, **serializer.validated_data)
        return Response(self.get_serializer(entry).data, status=status.HTTP_201_CREATED)

    @errors({400: None})  # any entry may go: the days it covered are priced again
    def destroy(self, request, *args, **kwargs):
        require_program_manager(request.user, MANAGERS_ONLY)
        remove_rate(user=request.user, entry=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)
