"""API shapes of clusters: a cluster with its groups and status URL, the create input, a node."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from portal import serializers as api
from portal.schema import ID_MAX
from tenants.serializers import SLUG_MAX
from workloads.clusters.models import Cluster, ClusterInstanceGroup, ClusterNode, validate_lustre_capacity
from workloads.clusters.reconcile import stalled_attempt


class InstanceGroupSerializer(api.ModelSerializer):
    class Meta:
        model = ClusterInstanceGroup
        fields = ["name", "role", "instance_type", "instance_count"]
        extra_kwargs = {
            "name": {"help_text": "The group's name within the cluster."},
            "role": {
                "help_text": "controller (head node), login or worker; only worker groups count against the allocation."
            },
            "instance_type": {"help_text": "EC2 instance type of the group's instances, e.g. p5.48xlarge."},
            "instance_count": {"help_text": "Instances in the group."},
        }


class StalledAttemptSerializer(api.Serializer):
    stopped_answering_at = serializers.DateTimeField(
        read_only=True, help_text="When the provisioning attempt last answered (its last heartbeat)."
    )
    retry_by = serializers.DateTimeField(
        read_only=True,
        help_text="When the reconciler sends the provisioning again, at the latest (its first run after the "
        "attempt's lease ran out).",
    )
    overdue = serializers.BooleanField(
        read_only=True, help_text="True once retry_by has passed without a new attempt (the program team is alerted)."
    )


class ClusterSerializer(api.ModelSerializer):
    organization = api.SlugRelatedField(slug_field="slug", read_only=True)
    groups = InstanceGroupSerializer(
        many=True, read_only=True, help_text="The cluster's instance groups: controller, login and workers."
    )
    status_url = serializers.SerializerMethodField(help_text="URL of this cluster in the API: poll it for the status.")
    stalled_attempt = serializers.SerializerMethodField(
        help_text="The provisioning attempt stopped answering (its worker was stopped, or lost the database) and is "
        "not yet sent again: when it last answered and when it will be retried. Null otherwise."
    )

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
            "stalled_attempt",
            "created_at",
            "status_changed_at",
            "last_polled_at",
        ]
        read_only_fields = fields
        extra_kwargs = {
            "name": {"help_text": "The cluster's name in the portal: lowercase letters, digits and hyphens."},
            "kind": {"help_text": "What runs the cluster: HyperPod with Slurm, HyperPod with EKS, or ParallelCluster."},
            "region": {"help_text": "AWS region the cluster runs in: its allocation's."},
            "status": {
                "help_text": "Where the cluster is in its lifecycle: requested, provisioning, in_service, degraded, "
                "deleting, deleted or failed."
            },
            "status_message": {"help_text": "The last word on the status, from AWS or the portal; empty when none."},
            "allocation": {"help_text": "Id of the allocation whose instances the cluster's workers use."},
            "workload": {"help_text": "Id of the workload the cluster runs; null when none."},
            "threads_per_core": {"help_text": "CPU threads per core: 1 (hyperthreading off) or 2."},
            "storage": {
                "help_text": "Shared file system: none, a new FSx for Lustre linked to S3, or an existing one."
            },
            "fsx_file_system_id": {
                "help_text": "The existing FSx for Lustre file system mounted (fs-…); empty with other storage."
            },
            "s3_data_repository_path": {
                "help_text": "S3 URI the new FSx for Lustre file system is linked to; empty with other storage."
            },
            "storage_capacity_gib": {
                "help_text": "Size of the new FSx for Lustre file system, in GiB (used with that storage only)."
            },
            "cloud_name": {
                "help_text": "The cluster's name in AWS (a retry gets a new one); empty before provisioning."
            },
            "cloud_id": {
                "help_text": "The cluster's ARN (HyperPod) or CloudFormation stack id (ParallelCluster); empty until "
                "AWS gives one."
            },
            "attempt": {"help_text": "Provisioning attempt, from 1: each retry of a failed cluster is a new attempt."},
            "status_changed_at": {"help_text": "When the status last changed."},
            "last_polled_at": {"help_text": "When the portal last asked AWS about the cluster; null if never."},
            "next_attempt_at": {
                "help_text": "When the next attempt is due (a scheduled retry, or work queued for a worker); null when "
                "none is."
            },
            "running_until": {
                "help_text": "While an attempt runs: the time limit it finishes by (or its worker is gone); null when "
                "none runs."
            },
        }

    @extend_schema_field(StalledAttemptSerializer(allow_null=True))
    def get_stalled_attempt(self, cluster: Cluster) -> dict | None:
        stalled = stalled_attempt(cluster)
        return StalledAttemptSerializer(stalled).data if stalled else None

    def get_status_url(self, cluster: Cluster) -> str:
        path = reverse("cluster-detail", kwargs={"pk": cluster.pk})
        request = self.context.get("request")
        return request.build_absolute_uri(path) if request else path


class GroupInputSerializer(api.Serializer):
    instance_type = serializers.CharField(
        max_length=40,
        help_text="EC2 instance type of the worker group, e.g. p5.48xlarge: one your organization has an active "
        "allocation of in the region.",
    )
    count = serializers.IntegerField(min_value=1, max_value=2000, help_text="Instances in the worker group.")


class ClusterCreateSerializer(api.Serializer):
    """Input only: the allocation and workload ids are resolved inside the caller's organization."""

    organization = serializers.SlugField(
        required=False, max_length=SLUG_MAX, help_text="Your organization's slug (optional if you have one)."
    )
    allocation = serializers.IntegerField(
        min_value=1,
        max_value=ID_MAX,
        help_text="Id of an active allocation of your organization: the workers count against it.",
    )
    workload = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=ID_MAX,
        help_text="Id of a workload of your organization the cluster runs; null or left out for none.",
    )
    name = serializers.RegexField(
        r"^[a-z][a-z0-9-]{0,39}$",
        max_length=40,
        help_text="The cluster's name: lowercase letters, digits and hyphens, starting with a letter.",
    )
    kind = serializers.ChoiceField(
        choices=Cluster.Kind.choices,
        default=Cluster.Kind.HYPERPOD_SLURM,
        help_text="What runs the cluster: HyperPod with Slurm (default), HyperPod with EKS, or ParallelCluster.",
    )
    instance_count = serializers.IntegerField(
        min_value=1,
        max_value=2000,
        required=False,
        help_text="Worker instances of the allocation's instance type; give this or groups.",
    )
    groups = GroupInputSerializer(
        many=True, required=False, help_text="Worker groups by instance type, instead of instance_count."
    )
    threads_per_core = serializers.ChoiceField(
        choices=[1, 2], default=1, help_text="CPU threads per core: 1 (hyperthreading off, default) or 2."
    )
    storage = serializers.ChoiceField(
        choices=Cluster.Storage.choices,
        default=Cluster.Storage.NONE,
        help_text="Shared file system: none (default), a new FSx for Lustre linked to S3, or an existing one.",
    )
    fsx_file_system_id = serializers.CharField(
        max_length=64,
        required=False,
        default="",
        allow_blank=True,
        help_text="With storage fsx_existing: the FSx for Lustre file system to mount (fs-…).",
    )
    s3_data_repository_path = serializers.CharField(
        max_length=500,
        required=False,
        default="",
        allow_blank=True,
        help_text="With storage fsx_lustre_new: the S3 URI to link the new file system to (s3://bucket/prefix/).",
    )
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
    hostname = serializers.SerializerMethodField(
        help_text="The node's private host name as the cloud gives it (ip-10-1-0-7…), the name Slurm and the GPU "
        "exporter use for it; null while the cloud has not given one."
    )

    class Meta:
        model = ClusterNode
        fields = [
            "instance_id",
            "hostname",
            "group_name",
            "instance_type",
            "status",
            "status_message",
            "launch_time",
            "first_seen_at",
            "last_seen_at",
            "gone_at",
            "accelerator_utilization",
            "accelerator_read_at",
        ]
        read_only_fields = fields
        extra_kwargs = {
            "instance_id": {"help_text": "EC2 instance id of the node (i-…)."},
            "group_name": {"help_text": "The instance group the node belongs to."},
            "instance_type": {"help_text": "EC2 instance type of the node."},
            "status": {"help_text": "The node's status as AWS last listed it, e.g. Running, Pending or Failure."},
            "status_message": {"help_text": "AWS's message about that status; empty when none."},
            "launch_time": {"help_text": "When AWS launched the instance; null when AWS does not say."},
            "first_seen_at": {"help_text": "When the portal first saw the node in the cluster."},
            "last_seen_at": {"help_text": "When the portal last saw the node in the cluster."},
            "gone_at": {"help_text": "When the node was first missing from the cluster's list; null while listed."},
            "accelerator_utilization": {
                "help_text": "Share of the node's accelerators busy at its last health read, 0 to 1: on Trainium the "
                "mean NeuronCore utilization the Neuron monitor gave (cores no runtime used count as idle); null when "
                "no reading gave one."
            },
            "accelerator_read_at": {
                "source": "gpu_read_at",
                "help_text": "When the node's accelerator telemetry (DCGM or Neuron monitor) was last read; null if "
                "never.",
            },
        }

    @extend_schema_field(serializers.CharField(allow_null=True, max_length=255))
    def get_hostname(self, node: ClusterNode) -> str | None:
        return node.hostname or None
