"""REST API for workloads, support cases and the weekly review.

Tenant rows come from `Model.objects.visible_to(user)` (tenants.api.TenantScopedViewSet), so another
organization's workload or case is a 404. Writes parse input with a serializer and call one service.
"""

from __future__ import annotations

from django.db.models import Prefetch
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.response import Response

from tenants.access import get_org_access_or_404, is_program_staff
from tenants.api import TenantScopedViewSet, organization_for_create
from tenants.models import Organization
from workloads import services
from workloads.filters import ActionItemFilter, SupportCaseFilter, WorkloadFilter
from workloads.models import ActionItem, ReviewMeeting, SupportCase, Workload
from workloads.serializers import (
    ActionItemSerializer,
    CaseChangeSerializer,
    CaseEventSerializer,
    ReviewMeetingSerializer,
    SupportCaseDetailSerializer,
    SupportCaseSerializer,
    WorkloadChangeSerializer,
    WorkloadSerializer,
)


def organization_for_write(user, slug: str | None) -> Organization:
    """The organization a new row goes to: the slug given (404 when it is not one of yours), or the
    caller's only organization (400 when there is no single one)."""
    if slug:
        return get_org_access_or_404(user, slug).organization
    return organization_for_create(user, None)


def visible_events(user, case: SupportCase):
    events = case.events.select_related("actor").order_by("created_at", "pk")
    # The one place the API decides who reads internal entries: program staff only.
    return events if is_program_staff(user) else events.public()


class IsProgramStaff(BasePermission):
    message = "The weekly review is for program staff."

    def has_permission(self, request, view) -> bool:
        return is_program_staff(request.user)


@extend_schema_view(
    list=extend_schema(summary="Workload records (your org's; every org's for program staff)"),
    create=extend_schema(summary="Record a workload (tenant members only)"),
    partial_update=extend_schema(summary="Change a workload; every changed field is kept in its history"),
    update=extend_schema(summary="Replace a workload's fields; every changed field is kept in its history"),
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
        return queryset.select_related("organization", "created_by")

    def create(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        organization = organization_for_write(request.user, data.pop("organization", None))
        workload = services.create_workload(user=request.user, organization=organization, data=data)
        return Response(
            self.get_serializer(self.get_queryset().get(pk=workload.pk)).data, status=status.HTTP_201_CREATED
        )

    def update(self, request, *args, **kwargs):
        workload = self.get_object()
        serializer = self.get_serializer(workload, data=request.data, partial=kwargs.get("partial", False))
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        slug = data.pop("organization", None)
        if slug and slug != workload.organization.slug:
            raise ValidationError({"organization": [_("A workload cannot move to another organization.")]})
        services.update_workload(user=request.user, workload=workload, data=data)
        return Response(self.get_serializer(self.get_queryset().get(pk=workload.pk)).data)

    @extend_schema(responses=WorkloadChangeSerializer(many=True), filters=False)
    @action(detail=True, methods=["get"], filterset_class=None, ordering_fields=None)
    def history(self, request, pk=None, **kwargs):
        """Field-level change history: who changed which field from what to what, newest first."""
        workload = self.get_object()
        changes = workload.changes.select_related("actor").order_by("-changed_at", "-pk")
        page = self.paginate_queryset(changes)
        return self.get_paginated_response(WorkloadChangeSerializer(page, many=True).data)


@extend_schema_view(
    list=extend_schema(summary="Support cases (your org's; every org's for program staff)"),
    create=extend_schema(summary="Open a support case"),
    partial_update=extend_schema(
        summary="Change status (reopen included), severity, assignee (staff) or the linked workload",
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
        return queryset.select_related("organization", "assignee", "opened_by", "workload")

    def get_serializer_class(self):
        return SupportCaseDetailSerializer if self.action == "retrieve" else super().get_serializer_class()

    def retrieve(self, request, *args, **kwargs):
        case = self.get_object()
        context = {**self.get_serializer_context(), "visible_events": visible_events(request.user, case)}
        return Response(SupportCaseDetailSerializer(case, context=context).data)

    def create(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        organization = organization_for_write(request.user, data.pop("organization", None))
        case = services.open_case(
            user=request.user,
            organization=organization,
            title=data.get("title", ""),
            description=data.get("description", ""),
            category=data.get("category", ""),
            severity=data.get("severity", SupportCase.Severity.S3),
            workload=data.get("workload"),
            assignee=data.get("assignee", services.UNSET),
        )
        return Response(self.get_serializer(self.get_queryset().get(pk=case.pk)).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=CaseChangeSerializer, responses=SupportCaseSerializer)
    def partial_update(self, request, *args, **kwargs):
        return super().partial_update(request, *args, **kwargs)

    def update(self, request, *args, **kwargs):
        case = self.get_object()
        fixed = sorted(set(request.data) - set(CaseChangeSerializer().fields))
        if fixed:
            raise ValidationError({name: [_("This field cannot be changed.")] for name in fixed})
        serializer = CaseChangeSerializer(data=request.data, context=self.get_serializer_context())
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        services.update_case(
            user=request.user,
            case=case,
            status=data.get("status", services.UNSET),
            severity=data.get("severity", services.UNSET),
            assignee=data.get("assignee", services.UNSET),
            workload=data.get("workload", services.UNSET),
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
            event = services.add_comment(
                user=request.user,
                case=case,
                body=serializer.validated_data["body"],
                internal=serializer.validated_data["internal"],
            )
            return Response(CaseEventSerializer(event).data, status=status.HTTP_201_CREATED)
        page = self.paginate_queryset(visible_events(request.user, case))
        return self.get_paginated_response(CaseEventSerializer(page, many=True).data)


@extend_schema_view(
    create=extend_schema(summary="Record the meeting of an ISO week (updates it if it exists)"),
)
class ReviewMeetingViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    viewsets.GenericViewSet,
):
    """Weekly review meetings (program staff only): attendees, minutes and action items."""

    serializer_class = ReviewMeetingSerializer
    permission_classes = [IsAuthenticated, IsProgramStaff]
    http_method_names = ["get", "post", "patch", "head", "options"]
    ordering_fields = ["week_start"]
    ordering = ["-week_start"]
    queryset = ReviewMeeting.objects.select_related("created_by").prefetch_related(
        "attendees",
        Prefetch(
            "action_items",
            queryset=ActionItem.objects.select_related("meeting", "owner", "organization", "done_by").order_by(
                "created_at", "pk"
            ),
        ),
    )

    def create(self, request, *args, **kwargs):
        """Records the week's meeting; if the week already has one, only the fields sent change."""
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        week_start = serializer.validated_data["week_start"]
        existing = self.get_queryset().filter(week_start=week_start).first()
        meeting, created = self._save(existing, week_start, serializer.validated_data)
        return Response(
            self.get_serializer(self.get_queryset().get(pk=meeting.pk)).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )

    def update(self, request, *args, **kwargs):
        meeting = self.get_object()
        serializer = self.get_serializer(meeting, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        if serializer.validated_data.get("week_start", meeting.week_start) != meeting.week_start:
            raise ValidationError({"week": [_("A meeting stays in its week.")]})
        self._save(meeting, meeting.week_start, serializer.validated_data)
        return Response(self.get_serializer(self.get_queryset().get(pk=meeting.pk)).data)

    def _save(self, meeting, week_start, data):
        """Fields left out of the request keep their recorded value (blank for a new meeting)."""
        fields = {}
        if meeting:
            fields = {
                "attendees": list(meeting.attendees.all()),
                "other_attendees": meeting.other_attendees,
                "minutes": meeting.minutes,
            }
        # Only what the request carries: a form-encoded body reads a missing list as [] in validated data.
        sent = [name for name in ("attendees", "other_attendees", "minutes") if name in self.request.data]
        fields.update({name: data.get(name, []) for name in sent})
        return services.save_review_meeting(user=self.request.user, week_start=week_start, **fields)


class ActionItemViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    viewsets.GenericViewSet,
):
    """Action items of the weekly review (program staff only). An item may link a case or open one;
    PATCH changes its status (open/done)."""

    serializer_class = ActionItemSerializer
    permission_classes = [IsAuthenticated, IsProgramStaff]
    http_method_names = ["get", "post", "patch", "head", "options"]
    filterset_class = ActionItemFilter
    ordering_fields = ["created_at", "due_on"]
    ordering = ["created_at", "pk"]

    def get_queryset(self):
        # Action items are program-staff records: visible_to() gives staff every one and anyone else none.
        return ActionItem.objects.visible_to(self.request.user).select_related(
            "meeting", "owner", "organization", "case", "done_by"
        )

    def create(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        item = services.add_action_item(
            user=request.user,
            meeting=data["meeting"],
            text=data.get("text", ""),
            organization=data.get("organization"),
            owner=data.get("owner"),
            due_on=data.get("due_on"),
            case=data.get("case"),
            new_case=data.get("new_case"),
        )
        return Response(self.get_serializer(self.get_queryset().get(pk=item.pk)).data, status=status.HTTP_201_CREATED)

    def update(self, request, *args, **kwargs):
        item = self.get_object()
        if set(request.data) != {"status"} or request.data["status"] not in ActionItem.Status.values:
            raise ValidationError({"status": [_("Send only the status: open or done.")]})
        services.set_action_item_done(
            user=request.user, item=item, done=request.data["status"] == ActionItem.Status.DONE
        )
        return Response(self.get_serializer(self.get_queryset().get(pk=item.pk)).data)
