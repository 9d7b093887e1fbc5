"""REST API of the weekly review (program staff only): meetings by ISO week, and action items."""

from __future__ import annotations

from django.db.models import Prefetch
from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.response import Response

from tenants.access import is_program_staff
from workloads.review.filters import ActionItemFilter
from workloads.review.models import ActionItem, ReviewMeeting
from workloads.review.serializers import ActionItemSerializer, ActionItemStatusSerializer, ReviewMeetingSerializer
from workloads.review.services import add_action_item, save_review_meeting, set_action_item_done


class IsProgramStaff(BasePermission):
    message = "The weekly review is for program staff."

    def has_permission(self, request, view) -> bool:
        return is_program_staff(request.user)


@extend_schema_view(
    create=extend_schema(
        summary="Record the meeting of an ISO week (updates it if it exists)",
        responses={
            201: OpenApiResponse(ReviewMeetingSerializer, description="The week had no meeting: it is recorded."),
            200: OpenApiResponse(
                ReviewMeetingSerializer, description="The week had a meeting: the fields sent are changed."
            ),
        },
    ),
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

    def get_queryset(self):
        items = ActionItem.objects.visible_to(self.request.user).select_related(
            "meeting", "owner", "organization", "done_by"
        )
        return ReviewMeeting.objects.select_related("created_by").prefetch_related(
            "attendees", Prefetch("action_items", queryset=items.order_by("created_at", "pk"))
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
        return save_review_meeting(user=self.request.user, week_start=week_start, **fields)


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
        item = add_action_item(
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

    @extend_schema(request=ActionItemStatusSerializer)
    def partial_update(self, request, *args, **kwargs):
        return super().partial_update(request, *args, **kwargs)

    def update(self, request, *args, **kwargs):
        item = self.get_object()
        change = ActionItemStatusSerializer(data=request.data)
        change.is_valid(raise_exception=True)
        done = change.validated_data["status"] == ActionItem.Status.DONE
        set_action_item_done(user=request.user, item=item, done=done)
        return Response(self.get_serializer(self.get_queryset().get(pk=item.pk)).data)
