"""REST API of workload records. Rows come from `Workload.objects.visible_to(user)` (TenantScopedViewSet), so
another organization's workload is a 404. Writes parse input with a serializer and call one service."""

from __future__ import annotations

from django.db.models import F
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from tenants.api import TenantScopedViewSet, organization_for_write
from workloads.records.filters import WorkloadFilter
from workloads.records.models import Workload
from workloads.records.serializers import WorkloadChangeSerializer, WorkloadDetailSerializer, WorkloadSerializer
from workloads.records.services import create_workload, update_workload


@extend_schema_view(
    list=extend_schema(summary="Workload records (your org's; every org's for program staff)"),
    retrieve=extend_schema(summary="A workload, with how its parallelism layout fits its allocation and clusters"),
    create=extend_schema(summary="Record a workload (tenant members only)", responses={201: WorkloadDetailSerializer}),
    partial_update=extend_schema(
        summary="Change a workload; every changed field is kept in its history", responses=WorkloadDetailSerializer
    ),
    update=extend_schema(
        summary="Replace a workload's fields; every changed field is kept in its history",
        responses=WorkloadDetailSerializer,
    ),
)
class WorkloadViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    TenantScopedViewSet,
):
    """Training workload records. A tenant writes its own; program staff read every organization's."""

    model = Workload
    serializer_class = WorkloadSerializer
    filterset_class = WorkloadFilter
    ordering_fields = [
        "name",
        "organization__name",
        "parameter_count",
        "training_tokens",
        "target_tokens",
        "status",
        "phase",
        "framework",
        "cluster_type",
        "updated_at",
        "created_at",
    ]
    ordering = ["organization__name", "name", "pk"]

    def scope_queryset(self, queryset):
        # ?ordering=training_tokens, by the field's API name (target_tokens, its former one, works too).
        queryset = queryset.annotate(training_tokens=F("target_tokens"))
        return queryset.select_related("organization", "created_by", "allocation__pool__instance_type")

    def get_serializer_class(self):
        # One shape for one workload, read or written: a client may send back what it read, `fit` included.
        detail = self.action in ("retrieve", "update", "partial_update")
        return WorkloadDetailSerializer if detail else super().get_serializer_class()

    def create(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        organization = organization_for_write(request.user, data.pop("organization", None))
        workload = create_workload(user=request.user, organization=organization, data=data)
        saved = WorkloadDetailSerializer(self.get_queryset().get(pk=workload.pk), context=self.get_serializer_context())
        return Response(saved.data, status=status.HTTP_201_CREATED)

    def update(self, request, *args, **kwargs):
        workload = self.get_object()
        serializer = self.get_serializer(workload, data=request.data, partial=kwargs.get("partial", False))
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        slug = data.pop("organization", None)
        if slug and slug != workload.organization.slug:
            raise ValidationError({"organization": [_("A workload cannot move to another organization.")]})
        update_workload(user=request.user, workload=workload, data=data)
        saved = WorkloadDetailSerializer(self.get_queryset().get(pk=workload.pk), context=self.get_serializer_context())
        return Response(saved.data)

    @extend_schema(responses=WorkloadChangeSerializer(many=True), filters=False)
    @action(detail=True, methods=["get"], filterset_class=None, ordering_fields=None)
    def history(self, request, pk=None, **kwargs):
        """Field-level change history: who changed which field from what to what, newest first."""
        workload = self.get_object()
        changes = workload.changes.select_related("actor").order_by("-changed_at", "-pk")
        page = self.paginate_queryset(changes)
        return self.get_paginated_response(WorkloadChangeSerializer(page, many=True).data)
