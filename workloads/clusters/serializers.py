"""API shapes of clusters: a cluster with its groups and status URL, the create input, a node."""

from __future__ import annotations

from django.urls import reverse
from rest_framework import serializers

from portal import serializers as api
from workloads.clusters.models import Cluster, ClusterInstanceGroup, ClusterNode, validate_lustre_capacity


class InstanceGroupSerializer(api.ModelSerializer):
    class Meta:
        model = ClusterInstanceGroup
        fields = ["name", "role", "instance_type", "instance_count"]


class ClusterSerializer(api.ModelSerializer):
    organization = api.SlugRelatedField(slug_field="slug", read_only=True)
    groups = InstanceGroupSerializer(many=True, read_only=True)
    status_url = serializers.SerializerMethodField()

    class Meta:
        model = Cluster
        fields = [
            "id",
            "organization",
            "name",
            "kind",
            "region",
            "status",
            "status_message",
            "status_url",
            "allocation",
            "workload",
            "groups",
            "threads_per_core",
            "storage",
            "fsx_file_system_id",
            "s3_data_repository_path",
            "storage_capacity_gib",
            "cloud_name",
            "cloud_id",
            "attempt",
            "last_error",
            "retries",
            "next_attempt_at",
            "running_until",
            "created_at",
            "status_changed_at",
            "last_polled_at",
        ]
        read_only_fields = fields

    def get_status_url(self, cluster: Cluster) -> str:
        path = reverse("cluster-detail", kwargs={"pk": cluster.pk})
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path


class GroupInputSerializer(api.Serializer):
    instance_type = serializers.CharField(max_length=40)
    count = serializers.IntegerField(min_value=1, max_value=2000)


class ClusterCreateSerializer(api.Serializer):
    """Input only: the allocation and workload ids are resolved inside the caller's organization."""

    organization = serializers.SlugField(
        required=False, help_text="Your organization's slug (optional if you have one)."
    )
    allocation = serializers.IntegerField(help_text="An active allocation of your organization.")
    workload = serializers.IntegerField(required=False, allow_null=True)
    name = serializers.RegexField(r"^[a-z][a-z0-9-]{0,39}$", max_length=40)
    kind = serializers.ChoiceField(choices=Cluster.Kind.choices, default=Cluster.Kind.HYPERPOD_SLURM)
    instance_count = serializers.IntegerField(
        min_value=1, max_value=2000, required=False, help_text="Workers of the allocation's instance type."
    )
    groups = GroupInputSerializer(many=True, required=False, help_text="Or: worker groups by instance type.")
    threads_per_core = serializers.ChoiceField(choices=[1, 2], default=1)
    storage = serializers.ChoiceField(choices=Cluster.Storage.choices, default=Cluster.Storage.NONE)
    fsx_file_system_id = serializers.CharField(max_length=64, required=False, default="", allow_blank=True)
    s3_data_repository_path = serializers.CharField(max_length=500, required=False, default="", allow_blank=True)
    storage_capacity_gib = serializers.IntegerField(
        default=1200,
        validators=[validate_lustre_capacity],
        help_text="New FSx for Lustre only: 1200, 2400 or a multiple of 2400 GiB.",
    )

    def validate(self, attrs):
        if not attrs.get("instance_count") and not attrs.get("groups"):
            raise serializers.ValidationError({"instance_count": "Give instance_count or groups."})
        if attrs.get("instance_count") and attrs.get("groups"):
            raise serializers.ValidationError({"groups": "Give instance_count or groups, not both."})
        return attrs


class ClusterNodeSerializer(api.ModelSerializer):
    class Meta:
        model = ClusterNode
        fields = [
            "instance_id",
            "group_name",
            "instance_type",
            "status",
            "status_message",
            "launch_time",
            "first_seen_at",
            "last_seen_at",
            "gone_at",
        ]
        read_only_fields = fields
