"""API shapes of workload records. Related fields are narrowed to what the caller may see, so another
organization's allocation is answered like an id that does not exist."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from portal import serializers as api
from tenants.capacity.estimate import MAX_TOKENS, TOKEN_COUNT
from tenants.models import Allocation
from tenants.serializers import OrganizationSlugField, request_user
from workloads.records.fit import workload_fit
from workloads.records.models import TOO_MANY_PARAMETERS, TOO_MANY_TOKENS, Workload, WorkloadChange

# Model field → its name in the API, where the two differ (one vocabulary with capacity requests).
API_NAMES = {"target_tokens": "training_tokens"}


class WorkloadChangeSerializer(api.ModelSerializer):
    actor = api.SlugRelatedField(
        slug_field="username", read_only=True, help_text="Username of the person who made the change."
    )

    class Meta:
        model = WorkloadChange
        fields = ["id", "kind", "field", "old_value", "new_value", "actor", "changed_at"]
        read_only_fields = fields  # the history is written by the services, never through the API
        extra_kwargs = {
            "kind": {"help_text": "created: the workload was recorded; changed: one of its fields changed."},
            "field": {"help_text": "The workload field that changed, by its API name; empty for a creation."},
            "old_value": {
                "help_text": "The field's value before the change, as text (a choice's key; a related object's name "
                "at the time); empty for a creation."
            },
            "new_value": {"help_text": "The field's value after the change; empty for a creation."},
            "changed_at": {"help_text": "When the change was made."},
        }

    def to_representation(self, change):
        data = super().to_representation(change)
        # The field as the API names it (training_tokens), not as the model does (target_tokens).
        data["field"] = API_NAMES.get(data["field"], data["field"])
        return data


@api.renamed(**API_NAMES)  # the model's names are the former API names
class WorkloadSerializer(api.ModelSerializer):
    organization = OrganizationSlugField()
    # Named as capacity requests and the estimate name it (the model keeps its field name, target_tokens).
    training_tokens = serializers.IntegerField(
        source="target_tokens",
        required=False,
        allow_null=True,
        min_value=0,
        max_value=MAX_TOKENS,
        validators=[TOKEN_COUNT],
        error_messages={"max_value": TOO_MANY_TOKENS},
        help_text="Tokens the run is to train on (not billions), at least 1,000,000; null when not given.",
    )
    allocation = serializers.PrimaryKeyRelatedField(
        queryset=Allocation.objects.none(),  # narrowed to the caller's allocations in __init__
        required=False,
        allow_null=True,
        help_text="Id of the organization's allocation the workload runs on; null for none.",
    )
    created_by = api.SlugRelatedField(
        slug_field="username", read_only=True, help_text="Username of the person who recorded the workload."
    )
    world_size = serializers.IntegerField(
        read_only=True,
        help_text="Ranks the layout needs, tensor × pipeline × data parallel: GPUs, or NeuronCores on Trainium.",
    )

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
            "training_tokens",
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
            "name": {"help_text": "The workload's name, unique within its organization."},
            "phase": {
                "help_text": "What the run is: pretraining, continued_pretraining, sft (supervised fine-tuning), rl "
                "(RL / post-training), evaluation or inference."
            },
            "status": {"help_text": "planned (default), running, paused, completed or abandoned."},
            "model_name": {"help_text": "Name of the model trained; empty when not given."},
            "architecture": {
                "help_text": "dense (default), or moe (mixture of experts, which needs active_parameter_count)."
            },
            "parameter_count": {
                "help_text": "Parameters of the model (not billions), e.g. 70000000000.",
                "error_messages": {"max_value": TOO_MANY_PARAMETERS},
            },
            "active_parameter_count": {
                "help_text": "Mixture-of-experts models only: parameters used per token; null for a dense model.",
                "error_messages": {"max_value": TOO_MANY_PARAMETERS},
            },
            "target_tokens": {
                "help_text": "Deprecated: the former name of training_tokens, accepted until 2027-06.",
                "error_messages": {"max_value": TOO_MANY_TOKENS},
            },
            "framework": {"help_text": "The training framework."},
            "tensor_parallel": {"help_text": "Tensor parallel degree: accelerators each layer is split across."},
            "pipeline_parallel": {"help_text": "Pipeline parallel degree: stages the model's layers are split into."},
            "data_parallel": {"help_text": "Data parallel degree: replicas of the model, each on its share of data."},
            "expert_parallel": {
                "help_text": "Expert parallel degree, within data parallelism: mixture-of-experts models only (1 for "
                "dense)."
            },
            "cluster_type": {
                "help_text": "What the workload runs on: ParallelCluster / Slurm, HyperPod / Slurm, HyperPod / EKS, "
                "or EKS."
            },
            "storage": {
                "help_text": "Where the workload keeps its data: FSx for Lustre with S3, FSx for OpenZFS, S3 only, or "
                "instance NVMe for checkpoints."
            },
            "notes": {"help_text": "Free-text notes; empty when none."},
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "request" in self.context:
            self.fields["allocation"].queryset = Allocation.objects.visible_to(request_user(self.context))


class FitSerializer(api.Serializer):
    """Read only: the portal's judgement, never input."""

    needed = serializers.IntegerField(
        help_text="Ranks the layout needs, tensor × pipeline × data parallel: GPUs, or NeuronCores on Trainium (32 per "
        "trn1.32xlarge)."
    )
    allocated = serializers.IntegerField(
        allow_null=True, help_text="Ranks the linked allocation holds; null without one."
    )
    in_clusters = serializers.IntegerField(
        allow_null=True, help_text="Ranks the workers of the workload's live clusters hold; null without any."
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
