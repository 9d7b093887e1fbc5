"""REST API of support cases and their history. Rows come from `SupportCase.objects.visible_to(user)`
(TenantScopedViewSet), so another organization's case is a 404; tenants never read internal notes."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.response import Response

from tenants.api import TenantScopedViewSet, organization_for_write
from workloads.support.filters import SupportCaseFilter
from workloads.support.models import SupportCase
from workloads.support.serializers import (
    CaseChangeSerializer,
    CaseEventSerializer,
    SupportCaseDetailSerializer,
    SupportCaseSerializer,
)
from workloads.support.services import UNSET, add_comment, case_history, open_case, update_case


@extend_schema_view(
    list=extend_schema(summary="Support cases (your org's; every org's for program staff)"),
    create=extend_schema(summary="Open a support case"),
    partial_update=extend_schema(
        summary="Change status (reopen included), severity, assignee (staff) or the linked workload, cluster or node",
    ),
    retrieve=extend_schema(summary="A case with its history (tenants never see internal notes)"),
)
class SupportCaseViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    TenantScopedViewSet,
):
    """Support cases. The history (events) is append-only; internal notes are for program staff only."""

    model = SupportCase
    serializer_class = SupportCaseSerializer
    filterset_class = SupportCaseFilter
    ordering_fields = ["created_at", "updated_at", "severity", "status", "title"]
    ordering = ["-created_at", "-pk"]
    http_method_names = ["get", "post", "patch", "head", "options"]

    def scope_queryset(self, queryset):
        return queryset.select_related("organization", "assignee", "opened_by", "workload", "node")

    def get_serializer_class(self):
        return SupportCaseDetailSerializer if self.action == "retrieve" else super().get_serializer_class()

    def retrieve(self, request, *args, **kwargs):
        case = self.get_object()
        context = {**self.get_serializer_context(), "visible_events": case_history(request.user, case)}
        return Response(SupportCaseDetailSerializer(case, context=context).data)

    def create(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        organization = organization_for_write(request.user, data.pop("organization", None))
        case = open_case(
            user=request.user,
            organization=organization,
            title=data.get("title", ""),
            description=data.get("description", ""),
            category=data.get("category", ""),
            severity=data.get("severity", SupportCase.Severity.S3),
            workload=data.get("workload"),
            cluster=data.get("cluster"),
            node=data.get("node"),
            assignee=data.get("assignee", UNSET),
        )
        return Response(self.get_serializer(self.get_queryset().get(pk=case.pk)).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=CaseChangeSerializer, responses=SupportCaseSerializer)
    def partial_update(self, request, *args, **kwargs):
        return super().partial_update(request, *args, **kwargs)

    def update(self, request, *args, **kwargs):
        case = self.get_object()
        serializer = CaseChangeSerializer(data=request.data, context=self.get_serializer_context())
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        update_case(
            user=request.user,
            case=case,
            status=data.get("status", UNSET),
            severity=data.get("severity", UNSET),
            assignee=data.get("assignee", UNSET),
            workload=data.get("workload", UNSET),
            cluster=data.get("cluster", UNSET),
            node=data.get("node", UNSET),
            comment=data.get("comment", ""),
        )
        return Response(self.get_serializer(self.get_queryset().get(pk=case.pk)).data)

    @extend_schema(
        methods=["GET"],
        summary="The case's history, oldest first (tenants never see internal notes)",
        responses=CaseEventSerializer(many=True),
        filters=False,
    )
    @extend_schema(
        methods=["POST"],
        summary="Comment on the case (program staff: `internal: true` for an internal note)",
        request=CaseEventSerializer,
        responses={201: CaseEventSerializer},
    )
    @action(detail=True, methods=["get", "post"], filterset_class=None, ordering_fields=None)
    def events(self, request, pk=None, **kwargs):
        case = self.get_object()
        if request.method == "POST":
            serializer = CaseEventSerializer(data=request.data)
            serializer.is_valid(raise_exception=True)
            event = add_comment(
                user=request.user,
                case=case,
                body=serializer.validated_data["body"],
                internal=serializer.validated_data["internal"],
            )
            return Response(CaseEventSerializer(event).data, status=status.HTTP_201_CREATED)
        page = self.paginate_queryset(case_history(request.user, case))
        return self.get_paginated_response(CaseEventSerializer(page, many=True).data)
