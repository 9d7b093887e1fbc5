"""REST API of capacity: pools (with free capacity over a window), requests and their decisions, allocations
and the compute estimate. Tenant rows come through tenants.api.TenantScopedViewSet; writes call one service."""

from __future__ import annotations

from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.pagination import BoundedPageNumberPagination
from tenants.access import is_program_manager, require
from tenants.api import TenantScopedViewSet, organization_for_create
from tenants.capacity.allocations import revoke_allocation
from tenants.capacity.decisions import approve_request, reject_request
from tenants.capacity.filters import AllocationFilter, CapacityRequestFilter
from tenants.capacity.ledger import allocated_by_day
from tenants.capacity.pools import estimate_for, pool_headroom
from tenants.capacity.requests import PLAN_FIELDS, Plan, create_request, edit_draft, submit_request, withdraw_request
from tenants.capacity.serializers import (
    AllocationSerializer,
    CapacityPoolSerializer,
    CapacityRequestSerializer,
    CommentSerializer,
    DecisionSerializer,
    EstimateResultSerializer,
    EstimateSerializer,
    PoolWindowSerializer,
    ReasonSerializer,
    estimate_as_dict,
)
from tenants.models import Allocation, CapacityPool, CapacityRequest, Program

WINDOW_PARAMETERS = [
    OpenApiParameter("start", OpenApiTypes.DATE, description="First day of a window (with end): adds free capacity."),
    OpenApiParameter("end", OpenApiTypes.DATE, description="Last day of the window, inclusive."),
]


@extend_schema_view(
    list=extend_schema(parameters=WINDOW_PARAMETERS), retrieve=extend_schema(parameters=WINDOW_PARAMETERS)
)
class CapacityPoolViewSet(viewsets.ReadOnlyModelViewSet):
    """The program's capacity pools (program-wide, not tenant data). With ?start=&end=, each pool
    carries its free capacity over that window: the fewest instances free on any day, and that day."""

    serializer_class = CapacityPoolSerializer
    queryset = CapacityPool.objects.select_related("program", "instance_type").order_by(
        "program", "instance_type__api_name", "region"
    )
    filterset_fields = ["region", "instance_type__api_name", "program__slug"]
    ordering_fields = ["region", "total_instances"]

    def get_serializer(self, *args, **kwargs):
        window = PoolWindowSerializer(data=self.request.query_params)
        window.is_valid(raise_exception=True)
        if "start" in window.validated_data and args:
            pools = args[0] if isinstance(args[0], list | tuple) else [args[0]]
            start, end = window.validated_data["start"], window.validated_data["end"]
            # One query for the allocations of every pool on the page, then a sweep per pool.
            by_day = allocated_by_day([p.pk for p in pools], first=start, last=end)
            kwargs["context"] = {
                **self.get_serializer_context(),
                "window": (start, end),
                "headroom": {p.pk: pool_headroom(p, by_day[p.pk], starts_on=start, ends_on=end) for p in pools},
            }
        return super().get_serializer(*args, **kwargs)


class CapacityRequestViewSet(
    mixins.CreateModelMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.UpdateModelMixin,
    TenantScopedViewSet,
):
    """Capacity requests: a tenant sees and acts on its own; program managers decide on all of them."""

    model = CapacityRequest
    serializer_class = CapacityRequestSerializer
    pagination_class = BoundedPageNumberPagination  # every request of the program: no COUNT(*) of the table
    filterset_class = CapacityRequestFilter
    ordering_fields = ["created_at", "submitted_at", "starts_on", "instance_count"]

    def scope_queryset(self, queryset):
        return queryset.select_related(
            "organization", "pool__instance_type", "pool__program", "created_by", "decided_by", "allocation"
        )

    def create(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        base = data.get("base_allocation")
        capacity_request = create_request(
            user=request.user,
            organization=organization_for_create(request.user, data.get("organization")),
            plan=Plan.from_data(data, base=base),
            base_allocation=base,
            submit=data["submit"],
        )
        return Response(self._fresh(capacity_request), status=status.HTTP_201_CREATED)

    def update(self, request, *args, **kwargs):
        """Tenants: rewrite a draft (PUT: the whole plan; PATCH: only the fields given), optionally with
        `"submit": true`. A submitted request is frozen: withdraw it and ask again."""
        capacity_request = self.get_object()
        serializer = self.get_serializer(capacity_request, data=request.data, partial=kwargs.get("partial", False))
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        plan = {
            "instance_type": capacity_request.pool.instance_type,
            "region": capacity_request.pool.region,
            **{field: getattr(capacity_request, field) for field in PLAN_FIELDS if field != "pool"},
        }
        plan |= {field: value for field, value in data.items() if field in plan}
        capacity_request = edit_draft(
            user=request.user,
            capacity_request=capacity_request,
            plan=Plan(**plan),
            submit=data.get("submit", False),
        )
        return Response(self._fresh(capacity_request))

    def partial_update(self, request, *args, **kwargs):
        """Tenants: change only the given fields of a draft, optionally with `"submit": true`."""
        return self.update(request, *args, partial=True, **kwargs)

    def _fresh(self, capacity_request):
        return self.get_serializer(self.get_queryset().get(pk=capacity_request.pk)).data

    @extend_schema(request=None, responses=CapacityRequestSerializer)
    @action(detail=True, methods=["post"])
    def submit(self, request, pk=None, **kwargs):
        capacity_request = submit_request(user=request.user, capacity_request=self.get_object())
        return Response(self._fresh(capacity_request))

    @extend_schema(request=None, responses=CapacityRequestSerializer)
    @action(detail=True, methods=["post"])
    def withdraw(self, request, pk=None, **kwargs):
        capacity_request = withdraw_request(user=request.user, capacity_request=self.get_object())
        return Response(self._fresh(capacity_request))

    @extend_schema(request=DecisionSerializer, responses={201: AllocationSerializer})
    @action(detail=True, methods=["post"])
    def approve(self, request, pk=None, **kwargs):
        """Program managers: approve in full, or partially with a smaller count and/or a shorter window."""
        capacity_request = self.get_object()
        # Before reading the body: 403, not a field error.
        require(is_program_manager(request.user), _("Only a program manager can decide on capacity."))
        decision = DecisionSerializer(data=request.data)
        decision.is_valid(raise_exception=True)
        allocation = approve_request(user=request.user, capacity_request=capacity_request, **decision.validated_data)
        return Response(AllocationSerializer(allocation).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=CommentSerializer, responses=CapacityRequestSerializer)
    @action(detail=True, methods=["post"])
    def reject(self, request, pk=None, **kwargs):
        """Program managers: reject with a comment the tenant reads."""
        capacity_request = self.get_object()
        require(is_program_manager(request.user), _("Only a program manager can decide on capacity."))
        comment = CommentSerializer(data=request.data)
        comment.is_valid(raise_exception=True)
        capacity_request = reject_request(
            user=request.user, capacity_request=capacity_request, comment=comment.validated_data["comment"]
        )
        return Response(self._fresh(capacity_request))


class AllocationViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TenantScopedViewSet):
    """Allocations: created only by approvals; program managers may revoke one with a reason."""

    model = Allocation
    serializer_class = AllocationSerializer
    pagination_class = BoundedPageNumberPagination  # every allocation of the program: no COUNT(*) of the table
    filterset_class = AllocationFilter
    ordering_fields = ["starts_on", "ends_on", "instance_count", "created_at"]

    def scope_queryset(self, queryset):
        return queryset.select_related("organization", "pool__instance_type", "revoked_by")

    @extend_schema(request=ReasonSerializer, responses=AllocationSerializer)
    @action(detail=True, methods=["post"])
    def revoke(self, request, pk=None, **kwargs):
        allocation = self.get_object()
        require(is_program_manager(request.user), _("Only a program manager can revoke an allocation."))
        reason = ReasonSerializer(data=request.data)
        reason.is_valid(raise_exception=True)
        allocation = revoke_allocation(user=request.user, allocation=allocation, reason=reason.validated_data["reason"])
        return Response(AllocationSerializer(self.get_queryset().get(pk=allocation.pk)).data)


class EstimateView(APIView):
    """The compute estimate for a training plan on an instance type, count and window."""

    @extend_schema(request=EstimateSerializer, responses=EstimateResultSerializer)
    def post(self, request):
        inputs = EstimateSerializer(data=request.data)
        inputs.is_valid(raise_exception=True)
        data = inputs.validated_data
        result = estimate_for(
            instance_type=data["instance_type"],
            region=data["region"],
            program=Program.objects.first(),
            parameters=data["parameter_count"],
            tokens=data.get("training_tokens"),
            instance_count=data["instance_count"],
            starts_on=data["starts_on"],
            ends_on=data["ends_on"],
            mfu=data.get("expected_mfu"),
        )
        return Response(EstimateResultSerializer(estimate_as_dict(result)).data)
