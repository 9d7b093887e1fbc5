"""REST API for interconnect validation: a cluster posts an nccl-tests log; people read the runs they may see."""

from __future__ import annotations

from django_filters import rest_framework as filters
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status

from tenants.api import TenantScopedViewSet
from tenants.filters import visible_rows
from workloads.clusters.models import Cluster
from workloads.reporting.ingest import ClusterIngestView
from workloads.validation.models import NcclValidation
from workloads.validation.serializers import NcclLogSerializer, NcclValidationSerializer
from workloads.validation.services import record_validation


class NcclIngestView(ClusterIngestView):
    serializer_class = NcclLogSerializer

    @extend_schema(
        summary="Post an nccl-tests log: judged against the baseline for its collective, type and node count",
        description="Body: JSON (the fields below) or the log itself as text/plain with `nodes` in the query string. "
        "The collective is read from the log (nccl-tests' banner or the binary its command line names), else "
        "`collective`; a run of a collective without a baseline is kept, verdict no_baseline (not judged). "
        "A bus bandwidth above the instance type's link ceiling, a negative bandwidth or size, a time not above zero "
        "or more nodes than the cluster has is a 400 naming the line. "
        "A run under its baseline marks the cluster interconnect suspect and opens (or adds to) a networking case. "
        "A malformed or cut log is a 400 naming the line, and nothing is kept. The same log posted again (a retry) "
        "answers 200 with the run already kept.",
        request={"application/json": NcclLogSerializer, "text/plain": OpenApiTypes.STR},
        responses={201: NcclValidationSerializer, 200: NcclValidationSerializer},
    )
    def post(self, request, pk: int, format=None):
        return super().post(request, pk, format)

    def ingest(self, cluster, data: dict, *, actor) -> tuple[dict, int]:
        validation, new = record_validation(
            cluster=cluster,
            log=data["log"],
            nodes=data.get("nodes"),
            collective=data.get("collective") or None,
            actor=actor,
        )
        return NcclValidationSerializer(validation).data, status.HTTP_201_CREATED if new else status.HTTP_200_OK


class NcclValidationFilter(filters.FilterSet):
    cluster = filters.ModelChoiceFilter(field_name="cluster", queryset=visible_rows(Cluster))
    verdict = filters.ChoiceFilter(choices=NcclValidation.Verdict.choices)

    class Meta:
        model = NcclValidation
        fields = ["cluster", "verdict"]


@extend_schema_view(
    list=extend_schema(summary="nccl-tests runs of the clusters you see, newest first"),
    retrieve=extend_schema(summary="One nccl-tests run with its bus bandwidth per message size"),
)
class NcclValidationViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TenantScopedViewSet):
    model = NcclValidation
    serializer_class = NcclValidationSerializer
    filterset_class = NcclValidationFilter
    ordering_fields = ["submitted_at", "peak_busbw_gbps"]

    def scope_queryset(self, queryset):
        return queryset.select_related("organization", "cluster").order_by("-submitted_at", "-pk")
