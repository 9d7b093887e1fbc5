"""REST API of the capacity planner (program managers only): make a plan for the pending queue, read it, apply it
(all, or some of its requests) through the approval service."""

from __future__ import annotations

from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.response import Response

from tenants.access import is_program_manager
from tenants.capacity.models import CapacityPlan
from tenants.capacity.planning.serializers import (
    ApplyResultSerializer,
    ApplySerializer,
    CapacityPlanSerializer,
    PlanRequestSerializer,
)
from tenants.capacity.planning.services import apply_plan, make_plan


class IsProgramManager(BasePermission):
    message = _("Only a program manager can plan capacity.")

    def has_permission(self, request, view) -> bool:
        return is_program_manager(request.user)


class CapacityPlanViewSet(mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Plans for the pending capacity queue. Plans are program staff's records across organizations: a tenant
    gets 403."""

    serializer_class = CapacityPlanSerializer
    permission_classes = [IsAuthenticated, IsProgramManager]
    queryset = CapacityPlan.objects.select_related("created_by")

    @extend_schema(request=PlanRequestSerializer, responses={201: CapacityPlanSerializer})
    def create(self, request, *args, **kwargs):
        """Plan the submitted requests of some or all pools; the plan is stored (for applying) and returned."""
        inputs = PlanRequestSerializer(data=request.data, context={"request": request})
        inputs.is_valid(raise_exception=True)
        plan = make_plan(user=request.user, ask=inputs.ask())
        return Response(CapacityPlanSerializer(plan).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=ApplySerializer, responses=ApplyResultSerializer)
    @action(detail=True, methods=["post"])
    def apply(self, request, pk=None):
        """Approve the plan's grants (all, or `requests`) one at a time through the approval service: a request
        changed or a pool resized since the plan is refused with the reason, the others are approved."""
        plan = self.get_object()
        body = ApplySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        outcomes = apply_plan(user=request.user, plan=plan, request_ids=body.validated_data.get("requests"))
        return Response(ApplyResultSerializer({"plan": plan.pk, "outcomes": outcomes}).data)
