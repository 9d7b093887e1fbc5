"""REST API for jobs: a cluster's reporter posts its sacct table; people read the jobs of the clusters they see."""

from __future__ import annotations

from dataclasses import asdict

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status

from tenants.api import TenantScopedViewSet
from workloads.jobs.filters import JobFilter
from workloads.jobs.models import Job
from workloads.jobs.serializers import JobIngestResultSerializer, JobIngestSerializer, JobSerializer
from workloads.jobs.services import ingest_sacct
from workloads.reporting.ingest import ClusterIngestView


class JobIngestView(ClusterIngestView):
    serializer_class = JobIngestSerializer
    items_field = "received"  # /metrics counts the jobs a report carried

    @extend_schema(
        summary="Post the cluster's sacct table: jobs are added or updated per job id (posting twice changes nothing)",
        description="Body: JSON (the fields below) or the sacct output itself as text/plain, with `timezone` and "
        "`interval_seconds` in the query string. Authenticate with the cluster's reporter token (`Token fmc_…`) or "
        "your own. A bad line, or a job the cluster cannot have run (an End before its Start, a time in the future, "
        "more nodes than the cluster has, more accelerators than its nodes hold), is a 400 naming the line, the job "
        "and the field, and nothing of the report is kept; over 20 MB is a 413.",
        request={"application/json": JobIngestSerializer, "text/plain": OpenApiTypes.STR},
        responses={200: JobIngestResultSerializer},
    )
    def post(self, request, pk: int, format=None):
        return super().post(request, pk, format)

    def ingest(self, cluster, data: dict, *, actor) -> dict:
        result = ingest_sacct(
            cluster=cluster,
            text=data["sacct"],
            timezone_name=data["timezone"],
            slurm_nodes=data.get("slurm_nodes", ""),
            slurm_partitions=data.get("slurm_partitions"),
            interval_seconds=data.get("interval_seconds"),
        )
        return asdict(result), status.HTTP_200_OK


@extend_schema_view(
    list=extend_schema(summary="Jobs of the clusters you see, newest first (filter by cluster, workload, state…)"),
    retrieve=extend_schema(summary="One job"),
)
class JobViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TenantScopedViewSet):
    model = Job
    serializer_class = JobSerializer
    filterset_class = JobFilter
    ordering_fields = ["submitted_at", "started_at", "ended_at", "accelerators"]

    def scope_queryset(self, queryset):
        return queryset.select_related("organization", "cluster").order_by("-submitted_at", "-pk")
