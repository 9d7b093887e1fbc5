"""REST API for GPU health: a cluster posts a node's exporter text; people read the health events they may see."""

from __future__ import annotations

from dataclasses import asdict

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status

from tenants.api import TenantScopedViewSet
from workloads.health.filters import HealthEventFilter
from workloads.health.models import HealthEvent
from workloads.health.serializers import HealthEventSerializer, HealthIngestResultSerializer, HealthIngestSerializer
from workloads.health.telemetry import ingest_exporter_text
from workloads.reporting.ingest import ClusterIngestView


class HealthIngestView(ClusterIngestView):
    serializer_class = HealthIngestSerializer
    items_field = "readings"  # /metrics counts the readings a report carried

    @extend_schema(
        summary="Post one node's GPU or Neuron exporter text, or a neuron-monitor JSON report: faults open health "
        "events, normal readings resolve them",
        description="For clusters without Prometheus. Body: JSON (the fields below) or the report itself as "
        "text/plain with `host` in the query string. `metrics` holds a dcgm-exporter or Neuron exporter scrape, or "
        "one JSON report of `neuron-monitor` (its `instance_info.instance_id` names the node). A malformed line or "
        "an impossible value is a 400 naming it, and nothing is kept.",
        request={"application/json": HealthIngestSerializer, "text/plain": OpenApiTypes.STR},
        responses={200: HealthIngestResultSerializer},
    )
    def post(self, request, pk: int, format=None):
        return super().post(request, pk, format)

    def ingest(self, cluster, data: dict, *, actor) -> dict:
        outcome = ingest_exporter_text(cluster=cluster, text=data["metrics"], host=data.get("host", ""))
        body = asdict(outcome)
        body.pop("unmatched_hosts")
        return body, status.HTTP_200_OK


@extend_schema_view(
    list=extend_schema(summary="Health events of the clusters you see: node and GPU faults, open and resolved"),
    retrieve=extend_schema(summary="One health event"),
)
class HealthEventViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TenantScopedViewSet):
    model = HealthEvent
    serializer_class = HealthEventSerializer
    filterset_class = HealthEventFilter
    ordering_fields = ["observed_at", "resolved_at"]

    def scope_queryset(self, queryset):
        return queryset.select_related("organization", "cluster").order_by("-observed_at", "-pk")
