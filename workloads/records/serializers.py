"""API shapes of workload records. Related fields are narrowed to what the caller may see, so another
organization's allocation is answered like an id that does not exist."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from portal import serializers as api
from tenants.models import Allocation
from tenants.serializers import OrganizationSlugField, request_user
from workloads.records.fit import workload_fit
from workloads.records.models import TOO_MANY_PARAMETERS, TOO_MANY_TOKENS, Workload, WorkloadChange


class WorkloadChangeSerializer(api.ModelSerializer):
    actor = api.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = WorkloadChange
        fields = ["id", "kind", "field", "old_value", "new_value", "actor", "changed_at"]
        read_only_fields = fields  # the history is written by the services, never through the API


class WorkloadSerializer(api.ModelSerializer):
    organization = OrganizationSlugField()
    allocation = serializers.PrimaryKeyRelatedField(
        queryset=Allocation.objects.none(),  # narrowed to the caller's allocations in __init__
        required=False,
        allow_null=True,
        help_text="Id of one of the organization's allocations.",
    )
    created_by = api.SlugRelatedField(slug_field="username", read_only=True)
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
            self.fields["allocation"].queryset = Allocation.objects.visible_to(request_user(self.context))


class FitSerializer(api.Serializer):
    """Read only: the portal's judgement, never input."""

    needed = serializers.IntegerField(help_text="Accelerators the layout needs: tensor × pipeline × data parallel.")
    allocated = serializers.IntegerField(
        allow_null=True, help_text="Accelerators of the linked allocation; null without one."
    )
    in_clusters = serializers.IntegerField(
        allow_null=True, help_text="Accelerators of the workers of the workload's live clusters; null without any."
    )
    warnings = serializers.ListField(
        child=serializers.CharField(),
        read_only=True,
        help_text="Where the layout does not fit what it runs on. Warnings only: the workload is recorded anyway.",
    )


class WorkloadDetailSerializer(WorkloadSerializer):
    """One workload, as read, created or changed: with how its layout fits its allocation and clusters."""

    fit = serializers.SerializerMethodField(help_text="The layout's accelerators beside what it runs on.")

    class Meta(WorkloadSerializer.Meta):
        fields = [*WorkloadSerializer.Meta.fields, "fit"]

    @extend_schema_field(FitSerializer)
    def get_fit(self, workload: Workload) -> dict:
        return workload_fit(workload).as_dict()
