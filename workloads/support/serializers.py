"""API shapes of support cases. Related fields are narrowed to what the caller may see, so another
organization's workload is answered like an id that does not exist."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from portal import serializers as api
from tenants.access import program_staff_users
from tenants.models import FREE_TEXT_MAX
from tenants.serializers import OrganizationSlugField, request_user
from workloads.clusters.models import Cluster
from workloads.records.models import Workload
from workloads.support.models import CaseEvent, SupportCase


class CaseEventSerializer(api.ModelSerializer):
    actor = api.SlugRelatedField(
        slug_field="username",
        read_only=True,
        help_text="Username of the person who made the entry; null when the portal did (a health incident, a "
        "failed validation).",
    )
    internal = serializers.BooleanField(
        default=False, help_text="Program staff only: an internal note, never shown or mailed to the tenant."
    )

    class Meta:
        model = CaseEvent
        fields = ["id", "kind", "internal", "body", "old_value", "new_value", "actor", "created_at"]
        read_only_fields = ["kind", "old_value", "new_value", "created_at"]
        extra_kwargs = {
            "kind": {
                "help_text": "What happened: opened, comment, status, assignee or severity (a change of it), or linked "
                "(a workload, cluster or node linked)."
            },
            "body": {
                "required": True,
                "allow_blank": False,
                "help_text": "The text of a comment or note (the case's description for an opened entry); empty for a "
                "change.",
            },
            "old_value": {
                "help_text": "For a change or link: the value before (a status or severity key, a username, a name); "
                "empty otherwise."
            },
            "new_value": {"help_text": "For a change or link: the value after; empty otherwise."},
            "created_at": {"help_text": "When the entry was made."},
        }


class NodeField(serializers.CharField):
    """A node of the case's cluster: written as its instance id (i-0abc…) or host name (ip-10-1-0-7), read as its
    instance id. Named without a cluster, it is looked up in the org's clusters and brings its cluster."""

    def __init__(self, **kwargs):
        kwargs.setdefault("allow_null", True)
        kwargs.setdefault("allow_blank", True)
        kwargs.setdefault("max_length", 255)
        kwargs.setdefault(
            "help_text",
            "A node the case is about: its instance id or host name, written; its instance id, read. Null or empty "
            "to clear it.",
        )
        super().__init__(**kwargs)

    def to_representation(self, node) -> str:
        return node.instance_id


class SupportCaseSerializer(api.ModelSerializer):
    organization = OrganizationSlugField()
    workload = serializers.PrimaryKeyRelatedField(
        queryset=Workload.objects.none(),
        required=False,
        allow_null=True,
        help_text="Id of a workload of the org the case is about; null for none.",
    )
    assignee = api.SlugRelatedField(
        slug_field="username",
        queryset=program_staff_users(),
        required=False,
        allow_null=True,
        help_text="Username of the program staff member the case is assigned to (staff set it; defaults to the "
        "org's lead support engineer); null when unassigned.",
    )
    opened_by = api.SlugRelatedField(
        slug_field="username",
        read_only=True,
        help_text="Username of the person who opened the case; null when the portal opened it (a health incident, "
        "a failed validation).",
    )
    cluster = serializers.PrimaryKeyRelatedField(
        queryset=Cluster.objects.none(),
        required=False,
        allow_null=True,
        help_text="Id of a cluster of the org the case is about (the portal sets it on the cases it opens for an "
        "incident); null for none.",
    )
    node = NodeField(required=False)
    time_to_first_response = serializers.SerializerMethodField(
        help_text="Seconds from opening to program staff's first reply; null before it."
    )
    time_open = serializers.SerializerMethodField(
        help_text="Seconds the case has been open: until resolved or closed, else until now."
    )
    read_only_messages = {"status": _("A new case is open: change its status afterwards with PATCH.")}

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
            "cluster",
            "node",
            "opened_by",
            "created_at",
            "updated_at",
            "first_response_at",
            "resolved_at",
            "time_to_first_response",
            "time_open",
        ]
        read_only_fields = ["status", "created_at", "updated_at", "first_response_at", "resolved_at"]
        extra_kwargs = {
            "title": {"help_text": "What the case is about, in one line."},
            "description": {"help_text": "The problem in full, as the case was opened with it."},
            "category": {
                "help_text": "The area of the problem: capacity, networking (NCCL / EFA), storage, node_health, "
                "quota, framework, account or other."
            },
            "severity": {
                "help_text": "s1 critical (training stopped), s2 high (training degraded), s3 normal (default) or s4 "
                "low (a question)."
            },
            "status": {
                "help_text": "open (a new case), in_progress, waiting_on_tenant, resolved or closed; change it with "
                "PATCH."
            },
            "created_at": {"help_text": "When the case was opened."},
            "updated_at": {
                "help_text": "When the case last changed in a way its organization can see (internal notes do not "
                "count)."
            },
            "first_response_at": {
                "help_text": "When program staff first replied where the tenant can read it; null before that, and "
                "for a case staff opened."
            },
            "resolved_at": {
                "help_text": "When the case was resolved or closed; null while it is active (reopening clears it)."
            },
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "request" in self.context:
            self.fields["workload"].queryset = Workload.objects.visible_to(request_user(self.context))
            self.fields["cluster"].queryset = Cluster.objects.visible_to(request_user(self.context))

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_time_to_first_response(self, case: SupportCase) -> int | None:
        if case.first_response_at is None:
            return None
        return int((case.first_response_at - case.created_at).total_seconds())

    @extend_schema_field(OpenApiTypes.INT)
    def get_time_open(self, case: SupportCase) -> int:
        return int((case.open_until - case.created_at).total_seconds())


class CaseChangeSerializer(api.Serializer):
    """PATCH of a case: each given field is one change in the case's history."""

    status = serializers.ChoiceField(
        choices=SupportCase.Status.choices,
        required=False,
        help_text="Tenants: resolved, closed, or open to reopen a resolved or closed case. Staff: any.",
    )
    severity = serializers.ChoiceField(
        choices=SupportCase.Severity.choices,
        required=False,
        help_text="The new severity: s1 critical, s2 high, s3 normal or s4 low.",
    )
    assignee = api.SlugRelatedField(
        slug_field="username",
        queryset=program_staff_users(),
        required=False,
        allow_null=True,
        help_text="Program staff only: username of a staff member, or null.",
    )
    workload = serializers.PrimaryKeyRelatedField(
        queryset=Workload.objects.none(),
        required=False,
        allow_null=True,
        help_text="Id of a workload of the org the case is about; null for none.",
    )
    cluster = serializers.PrimaryKeyRelatedField(
        queryset=Cluster.objects.none(),
        required=False,
        allow_null=True,
        help_text="Id of a cluster of the org, or null; a node of another cluster is dropped from the case.",
    )
    node = NodeField(required=False)
    comment = serializers.CharField(
        max_length=FREE_TEXT_MAX, required=False, allow_blank=True, help_text="A comment added with the change."
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "request" in self.context:
            self.fields["workload"].queryset = Workload.objects.visible_to(request_user(self.context))
            self.fields["cluster"].queryset = Cluster.objects.visible_to(request_user(self.context))


class SupportCaseDetailSerializer(SupportCaseSerializer):
    """The detail adds the case's history: for a tenant without internal entries (the view filters them)."""

    events = serializers.SerializerMethodField(
        help_text="The case's history, oldest first; a tenant does not see internal notes."
    )

    class Meta(SupportCaseSerializer.Meta):
        fields = [*SupportCaseSerializer.Meta.fields, "events"]

    @extend_schema_field(CaseEventSerializer(many=True))
    def get_events(self, case: SupportCase):
        return CaseEventSerializer(self.context["visible_events"], many=True).data
