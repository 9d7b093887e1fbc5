"""API shapes. Serializers parse and validate input types; workloads.services applies the rules and writes.

Related fields are narrowed to what the caller may see, so another organization's allocation, workload
or case is answered like an id that does not exist.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from tenants.models import Allocation, Organization
from workloads.models import (
    TOO_MANY_PARAMETERS,
    TOO_MANY_TOKENS,
    ActionItem,
    CaseEvent,
    ReviewMeeting,
    SupportCase,
    Workload,
    WorkloadChange,
)
from workloads.review import iso_week, parse_iso_week

User = get_user_model()


def _user(context):
    return context["request"].user


class OrganizationSlugField(serializers.CharField):
    """An organization's slug. Resolved by the view through tenants.access (404 when not yours)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        kwargs.setdefault(
            "help_text", "Slug of the organization; may be left out when you belong to exactly one (create only)."
        )
        super().__init__(**kwargs)

    def to_representation(self, value):
        return value.slug


class WorkloadChangeSerializer(serializers.ModelSerializer):
    actor = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = WorkloadChange
        fields = ["id", "kind", "field", "old_value", "new_value", "actor", "changed_at"]


class WorkloadSerializer(serializers.ModelSerializer):
    organization = OrganizationSlugField()
    allocation = serializers.PrimaryKeyRelatedField(
        queryset=Allocation.objects.none(),  # narrowed to the caller's allocations in __init__
        required=False,
        allow_null=True,
        help_text="Id of one of the organization's allocations.",
    )
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    world_size = serializers.IntegerField(read_only=True, help_text="Accelerators: tensor × pipeline × data parallel.")

    class Meta:
        model = Workload
        fields = [
            "id",
            "organization",
            "name",
            "phase",
            "status",
            "model_name",
            "architecture",
            "parameter_count",
            "active_parameter_count",
            "target_tokens",
            "framework",
            "tensor_parallel",
            "pipeline_parallel",
            "data_parallel",
            "expert_parallel",
            "world_size",
            "cluster_type",
            "storage",
            "allocation",
            "notes",
            "created_by",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["created_at", "updated_at"]
        # The model's check constraints are worded per field by Workload.clean() in the service.
        validators = []
        extra_kwargs = {
            "parameter_count": {"error_messages": {"max_value": TOO_MANY_PARAMETERS}},
            "active_parameter_count": {"error_messages": {"max_value": TOO_MANY_PARAMETERS}},
            "target_tokens": {"error_messages": {"max_value": TOO_MANY_TOKENS}},
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "request" in self.context:
            self.fields["allocation"].queryset = Allocation.objects.visible_to(_user(self.context))


class CaseEventSerializer(serializers.ModelSerializer):
    actor = serializers.SlugRelatedField(slug_field="username", read_only=True)
    internal = serializers.BooleanField(
        default=False, help_text="Program staff only: an internal note, never shown or mailed to the tenant."
    )

    class Meta:
        model = CaseEvent
        fields = ["id", "kind", "internal", "body", "old_value", "new_value", "actor", "created_at"]
        read_only_fields = ["kind", "old_value", "new_value", "created_at"]
        extra_kwargs = {"body": {"required": True, "allow_blank": False}}


class SupportCaseSerializer(serializers.ModelSerializer):
    organization = OrganizationSlugField()
    workload = serializers.PrimaryKeyRelatedField(
        queryset=Workload.objects.none(), required=False, allow_null=True, help_text="Id of a workload of the org."
    )
    assignee = serializers.SlugRelatedField(
        slug_field="username",
        queryset=User.objects.filter(staff_role__isnull=False),
        required=False,
        allow_null=True,
        help_text="Username of a program staff member (staff only; defaults to the org's lead support engineer).",
    )
    opened_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    time_to_first_response = serializers.SerializerMethodField(help_text="Seconds; null before the first reply.")
    time_open = serializers.SerializerMethodField(help_text="Seconds open, until resolved or closed.")

    class Meta:
        model = SupportCase
        fields = [
            "id",
            "organization",
            "title",
            "description",
            "category",
            "severity",
            "status",
            "assignee",
            "workload",
            "opened_by",
            "created_at",
            "updated_at",
            "first_response_at",
            "resolved_at",
            "time_to_first_response",
            "time_open",
        ]
        read_only_fields = ["created_at", "updated_at", "first_response_at", "resolved_at"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "request" in self.context:
            self.fields["workload"].queryset = Workload.objects.visible_to(_user(self.context))

    @extend_schema_field(OpenApiTypes.INT)
    def get_time_to_first_response(self, case: SupportCase) -> int | None:
        if case.first_response_at is None:
            return None
        return int((case.first_response_at - case.created_at).total_seconds())

    @extend_schema_field(OpenApiTypes.INT)
    def get_time_open(self, case: SupportCase) -> int:
        return int((case.open_until - case.created_at).total_seconds())


class CaseChangeSerializer(serializers.Serializer):
    """PATCH of a case: each given field is one change in the case's history."""

    status = serializers.ChoiceField(
        choices=SupportCase.Status.choices,
        required=False,
        help_text="Tenants: resolved, closed, or open to reopen a resolved or closed case. Staff: any.",
    )
    severity = serializers.ChoiceField(choices=SupportCase.Severity.choices, required=False)
    assignee = serializers.SlugRelatedField(
        slug_field="username",
        queryset=User.objects.filter(staff_role__isnull=False),
        required=False,
        allow_null=True,
        help_text="Program staff only: username of a staff member, or null.",
    )
    workload = serializers.PrimaryKeyRelatedField(
        queryset=Workload.objects.none(), required=False, allow_null=True, help_text="Id of a workload of the org."
    )
    comment = serializers.CharField(required=False, allow_blank=True, help_text="A comment added with the change.")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "request" in self.context:
            self.fields["workload"].queryset = Workload.objects.visible_to(_user(self.context))


class SupportCaseDetailSerializer(SupportCaseSerializer):
    """The detail adds the case's history: for a tenant without internal entries (the view filters them)."""

    events = serializers.SerializerMethodField()

    class Meta(SupportCaseSerializer.Meta):
        fields = [*SupportCaseSerializer.Meta.fields, "events"]

    @extend_schema_field(CaseEventSerializer(many=True))
    def get_events(self, case: SupportCase):
        return CaseEventSerializer(self.context["visible_events"], many=True).data


class ActionItemSerializer(serializers.ModelSerializer):
    meeting = serializers.PrimaryKeyRelatedField(queryset=ReviewMeeting.objects.all())
    week = serializers.SerializerMethodField()
    organization = serializers.SlugRelatedField(
        slug_field="slug", queryset=Organization.objects.all(), required=False, allow_null=True
    )
    owner = serializers.SlugRelatedField(
        slug_field="username", queryset=User.objects.filter(staff_role__isnull=False), required=False, allow_null=True
    )
    case = serializers.PrimaryKeyRelatedField(
        queryset=SupportCase.objects.all(), required=False, allow_null=True, help_text="Link an existing case."
    )
    new_case = serializers.DictField(
        child=serializers.CharField(allow_blank=True),
        write_only=True,
        required=False,
        allow_empty=False,
        help_text="Open a case for this item: {title, category, severity, description} in its organization.",
    )
    done_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

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
        read_only_fields = ["done_at", "created_at"]

    def get_week(self, item: ActionItem) -> str:
        return item.meeting.iso_week


@extend_schema_field({"type": "string", "pattern": r"^\d{4}-W\d{2}$", "example": "2027-W05"})
class IsoWeekField(serializers.Field):
    """A week as ISO 8601 text (2027-W05), stored as its Monday."""

    def to_representation(self, value):
        return iso_week(value)

    def to_internal_value(self, data):
        try:
            return parse_iso_week(str(data))
        except ValueError:
            raise serializers.ValidationError("Give an ISO week such as 2027-W05.") from None


class ReviewMeetingSerializer(serializers.ModelSerializer):
    week = IsoWeekField(source="week_start", help_text="ISO week in the program's timezone, e.g. 2027-W05.")
    attendees = serializers.SlugRelatedField(
        slug_field="username", many=True, queryset=User.objects.filter(staff_role__isnull=False), required=False
    )
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    action_items = ActionItemSerializer(many=True, read_only=True)

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
