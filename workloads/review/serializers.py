"""API shapes of the weekly review."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from portal import serializers as api
from portal.periods import iso_week, parse_iso_week
from tenants.access import program_staff_users, visible_organizations
from tenants.cycle import program_cycle
from tenants.models import Organization
from tenants.serializers import request_user
from workloads.review.models import ActionItem, ReviewMeeting
from workloads.support.models import SupportCase


class ActionItemSerializer(api.ModelSerializer):
    meeting = serializers.PrimaryKeyRelatedField(
        queryset=ReviewMeeting.objects.all(), help_text="Id of the review meeting the item was raised at."
    )
    week = serializers.SerializerMethodField(help_text="ISO week of that meeting, e.g. 2027-W05.")
    organization = api.SlugRelatedField(
        slug_field="slug",
        queryset=Organization.objects.none(),
        required=False,
        allow_null=True,
        help_text="Slug of the organization the item is about; null for a program-wide item.",
    )
    owner = api.SlugRelatedField(
        slug_field="username",
        queryset=program_staff_users(),
        required=False,
        allow_null=True,
        help_text="Username of the program staff member who owns the item; null when nobody does.",
    )
    case = serializers.PrimaryKeyRelatedField(
        queryset=SupportCase.objects.none(),
        required=False,
        allow_null=True,
        help_text="Id of the support case the item is linked to; null when none.",
    )
    new_case = serializers.DictField(
        child=serializers.CharField(allow_blank=True),
        write_only=True,
        required=False,
        allow_empty=False,
        help_text="Open a case for this item: {title, category, severity, description} in its organization.",
    )
    done_by = api.SlugRelatedField(
        slug_field="username",
        read_only=True,
        help_text="Username of the person who marked the item done; null while open.",
    )
    read_only_messages = {"status": _('A new item is open: mark it done afterwards with PATCH {"status": "done"}.')}

    class Meta:
        model = ActionItem
        fields = [
            "id",
            "meeting",
            "week",
            "organization",
            "text",
            "owner",
            "due_on",
            "case",
            "new_case",
            "status",
            "done_at",
            "done_by",
            "created_at",
        ]
        read_only_fields = ["status", "done_at", "created_at"]
        extra_kwargs = {
            "text": {"help_text": "What is to be done."},
            "due_on": {"help_text": "The day the item is due; null when it has no date."},
            "status": {"help_text": "open or done; an open item carries forward to every later week until done."},
            "done_at": {"help_text": "When the item was marked done; null while open."},
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "request" in self.context:
            user = request_user(self.context)
            self.fields["organization"].queryset = visible_organizations(user)
            self.fields["case"].queryset = SupportCase.objects.visible_to(user)

    def get_week(self, item: ActionItem) -> str:
        return item.meeting.iso_week


@extend_schema_field({"type": "string", "pattern": r"^\d{4}-W\d{2}$", "example": "2027-W05"})
class IsoWeekField(serializers.Field):
    """A week as ISO 8601 text (2027-W05), stored as its Monday."""

    def to_representation(self, value):
        return iso_week(value)

    def to_internal_value(self, data):
        try:
            monday = parse_iso_week(str(data))
        except ValueError:
            raise serializers.ValidationError("Give an ISO week such as 2027-W05.") from None
        cycle = program_cycle()
        if monday not in cycle:
            raise serializers.ValidationError(cycle.message())
        return monday


class ReviewMeetingSerializer(api.ModelSerializer):
    week = IsoWeekField(source="week_start", help_text="ISO week in the program's timezone, e.g. 2027-W05.")
    attendees = api.SlugRelatedField(
        slug_field="username",
        many=True,
        queryset=program_staff_users(),
        required=False,
        help_text="Usernames of the program staff who attended.",
    )
    created_by = api.SlugRelatedField(
        slug_field="username", read_only=True, help_text="Username of the person who recorded the meeting."
    )
    action_items = ActionItemSerializer(many=True, read_only=True, help_text="The action items raised at the meeting.")

    class Meta:
        model = ReviewMeeting
        fields = [
            "id",
            "week",
            "week_start",
            "attendees",
            "other_attendees",
            "minutes",
            "action_items",
            "created_by",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["week_start", "created_at", "updated_at"]
        extra_kwargs = {
            "week_start": {"help_text": "The Monday of the meeting's week."},
            "other_attendees": {"help_text": "Anyone else who attended, as free text; empty when nobody."},
            "minutes": {"help_text": "The meeting's minutes, free text."},
        }


class ActionItemStatusSerializer(api.Serializer):
    """The one change an action item takes after it exists."""

    status = serializers.ChoiceField(
        choices=ActionItem.Status.choices, help_text="The item's new status: done, or open to reopen it."
    )
