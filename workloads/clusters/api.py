"""REST API for clusters: create → 202 with the cluster and its status URL; list; detail;
delete → 202 (deleting); nodes; retry. Rows come from `Cluster.objects.visible_to(user)`
(tenants.api.TenantScopedViewSet), so another organization's cluster is a 404."""

from __future__ import annotations

from django.db.models import Prefetch
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from tenants.api import TenantScopedViewSet, organization_for_write
from workloads.clusters.allowance import active_allocations
from workloads.clusters.filters import ClusterFilter
from workloads.clusters.models import Cluster, ClusterInstanceGroup, ClusterNode
from workloads.clusters.serializers import ClusterCreateSerializer, ClusterNodeSerializer, ClusterSerializer
from workloads.clusters.services import GroupRequest, create_cluster, request_delete, retry_cluster
from workloads.clusters.views import operator_access
from workloads.records.models import Workload


@extend_schema_view(
    list=extend_schema(summary="Clusters (your org's; every org's for program staff)"),
    retrieve=extend_schema(summary="One cluster with its status: poll this (the status_url) after creating"),
    create=extend_schema(
        summary="Create a cluster from an active allocation: 202, provisioning continues in the background",
        request=ClusterCreateSerializer,
        responses={202: ClusterSerializer},
    ),
    destroy=extend_schema(summary="Delete a cluster: 202, it moves to deleting", responses={202: ClusterSerializer}),
)
class ClusterViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.DestroyModelMixin, TenantScopedViewSet):
    model = Cluster
    serializer_class = ClusterSerializer
    filterset_class = ClusterFilter
    ordering_fields = ["created_at", "name", "status"]

    def scope_queryset(self, queryset):
        return (
            queryset.select_related("organization")
            .prefetch_related(
                Prefetch(
                    "groups",
                    queryset=ClusterInstanceGroup.objects.visible_to(self.request.user).order_by("role", "name"),
                )
            )
            .order_by("-created_at", "-pk")
        )

    def create(self, request, *args, **kwargs):
        payload = ClusterCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        organization = organization_for_write(request.user, data.get("organization"))
        operator_access(request.user, organization)
        allocation = active_allocations(organization).select_related("pool__instance_type")
        # Another org's allocation id looks exactly like one that does not exist.
        allocation = allocation.filter(pk=data["allocation"]).first()
        if allocation is None:
            raise ValidationError({"allocation": [_("No active allocation of your organization has this id.")]})
        workload = None
        if data.get("workload"):
            workload = Workload.objects.for_org(organization).filter(pk=data["workload"]).first()
            if workload is None:
                raise ValidationError({"workload": [_("Your organization has no workload with this id.")]})
        if data.get("groups"):
            groups = [GroupRequest(g["instance_type"], g["count"]) for g in data["groups"]]
        else:
            groups = [GroupRequest(allocation.pool.instance_type.api_name, data["instance_count"])]
        cluster = create_cluster(
            organization=organization,
            allocation=allocation,
            workload=workload,
            name=data["name"],
            kind=data["kind"],
            groups=groups,
            storage=data["storage"],
            fsx_file_system_id=data["fsx_file_system_id"],
            s3_data_repository_path=data["s3_data_repository_path"],
            storage_capacity_gib=data["storage_capacity_gib"],
            threads_per_core=int(data["threads_per_core"]),
            actor=request.user,
        )
        body = ClusterSerializer(cluster, context=self.get_serializer_context()).data
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["status_url"]})

    def destroy(self, request, *args, **kwargs):
        cluster = self.get_object()
        operator_access(request.user, cluster.organization)
        cluster = request_delete(cluster=cluster, actor=request.user)
        return Response(self.get_serializer(cluster).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        summary="The cluster's nodes as last polled", responses=ClusterNodeSerializer(many=True), filters=False
    )
    @action(detail=True, methods=["get"])
    def nodes(self, request, pk=None, format=None):
        cluster = self.get_object()
        nodes = ClusterNode.objects.for_org(cluster.organization).filter(cluster=cluster)
        page = self.paginate_queryset(nodes.order_by("gone_at", "group_name", "instance_id"))
        return self.get_paginated_response(ClusterNodeSerializer(page, many=True).data)

    @extend_schema(
        summary="Provision a failed cluster again (new attempt)", request=None, responses={202: ClusterSerializer}
    )
    @action(detail=True, methods=["post"])
    def retry(self, request, pk=None, format=None):
        cluster = self.get_object()
        operator_access(request.user, cluster.organization)
        cluster = retry_cluster(cluster=cluster, actor=request.user)
        return Response(self.get_serializer(cluster).data, status=status.HTTP_202_ACCEPTED)
