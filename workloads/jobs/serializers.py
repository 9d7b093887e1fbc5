"""API shapes of jobs: what a report carries in, and a job as the portal keeps it."""

from __future__ import annotations

from rest_framework import serializers

from portal import serializers as api
from workloads.jobs.models import Job
from workloads.jobs.sacct import SACCT_COMMAND, SINFO_COMMAND
from workloads.jobs.services import MAX_INTERVAL, MIN_INTERVAL
from workloads.reporting.ingest import report_field


class JobIngestSerializer(api.Serializer):
    text_field = "sacct"  # a text/plain body is this field

    sacct = report_field(f"The output of `{SACCT_COMMAND}` (empty: no jobs).", allow_blank=True)
    slurm_nodes = report_field(
        required=False,
        allow_blank=True,
        help_text=f"The output of `{SINFO_COMMAND}`: maps Slurm node names to hosts (ParallelCluster names nodes "
        "queue-st-type-N).",
    )
    timezone = serializers.CharField(
        required=False, default="UTC", max_length=64, help_text="The time zone sacct printed in (run it with TZ=UTC)."
    )
    interval_seconds = serializers.IntegerField(
        required=False,
        min_value=MIN_INTERVAL,
        max_value=MAX_INTERVAL,
        help_text="How often the reporter runs: after three intervals without a report it is marked silent.",
    )


class JobIngestResultSerializer(serializers.Serializer):
    received = serializers.IntegerField(help_text="Jobs in the report.")
    created = serializers.IntegerField(help_text="New to the portal.")
    updated = serializers.IntegerField(help_text="Known, and changed (state, end, nodes…).")
    unchanged = serializers.IntegerField(help_text="Known and the same.")


class JobSerializer(api.ModelSerializer):
    organization = api.SlugRelatedField(slug_field="slug", read_only=True)
    cluster_name = serializers.CharField(source="cluster.name", read_only=True)
    state_unknown = serializers.BooleanField(
        read_only=True,
        help_text="Last seen holding nodes, but its reporter went silent or a node it ran on is gone.",
    )
    accelerator_hours = serializers.FloatField(
        read_only=True, help_text="Accelerators × hours from start to end (a running job: to its last report)."
    )

    class Meta:
        model = Job
        fields = [
            "id",
            "organization",
            "cluster",
            "cluster_name",
            "job_id",
            "name",
            "user",
            "account",
            "partition",
            "state",
            "state_unknown",
            "cancelled_by_uid",
            "submitted_at",
            "started_at",
            "ended_at",
            "elapsed_seconds",
            "node_count",
            "node_list",
            "accelerators",
            "accelerator_kind",
            "accelerator_type",
            "accelerator_hours",
            "first_reported_at",
            "last_reported_at",
        ]
        read_only_fields = fields
