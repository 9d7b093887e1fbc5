"""API shapes of jobs: what a report carries in, and a job as the portal keeps it."""

from __future__ import annotations

from rest_framework import serializers

from portal import serializers as api
from workloads.jobs.models import Job
from workloads.jobs.sacct import PARTITIONS_COMMAND, SACCT_COMMAND, SINFO_COMMAND
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
    slurm_partitions = report_field(
        required=False,
        allow_blank=True,
        help_text=f"The output of `{PARTITIONS_COMMAND}`: a partition with OverSubscribe=EXCLUSIVE gives each job "
        "whole nodes, so a job there without gres holds its nodes' accelerators. Absent: what the last report said.",
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
    cluster_name = serializers.CharField(source="cluster.name", read_only=True, help_text="Name of that cluster.")
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
            "accelerators_source",
            "accelerator_hours",
            "first_reported_at",
            "last_reported_at",
        ]
        read_only_fields = fields
        extra_kwargs = {
            "cluster": {"help_text": "Id of the cluster that ran the job."},
            "job_id": {"help_text": "Slurm's job id as sacct prints it: 123, an array task 123_4, a part 123+1."},
            "name": {"help_text": "The job's name in Slurm."},
            "user": {"help_text": "The Slurm user who submitted the job."},
            "account": {"help_text": "The Slurm account the job ran under; empty when none."},
            "partition": {"help_text": "The Slurm partition the job ran in."},
            "state": {"help_text": "Slurm's job state at the last report, e.g. RUNNING, COMPLETED, FAILED, CANCELLED."},
            "cancelled_by_uid": {"help_text": "Unix uid of whoever cancelled the job; null unless cancelled."},
            "submitted_at": {"help_text": "When the job was submitted; null when sacct does not say."},
            "started_at": {"help_text": "When the job started; null before it starts."},
            "ended_at": {"help_text": "When the job ended; null until it ends."},
            "elapsed_seconds": {"help_text": "Seconds the job has run (sacct's ElapsedRaw), at the last report."},
            "node_count": {"help_text": "Nodes allocated to the job."},
            "node_list": {"help_text": "Slurm's host list of the job's nodes, e.g. ip-10-1-0-[1-4]."},
            "accelerators": {"help_text": "Accelerators (GPUs or Neuron devices) allocated to the job, on all nodes."},
            "accelerator_kind": {"help_text": "gpu or neuron; empty when the job has no accelerators."},
            "accelerator_type": {"help_text": "The accelerator model Slurm names, e.g. h100; empty when not named."},
            "accelerators_source": {
                "help_text": "Where `accelerators` came from: alloc_tres (AllocTRES names GPU or Neuron gres), "
                "exclusive_node (no gres, but its partition is OverSubscribe=EXCLUSIVE: it holds its nodes' "
                "accelerators), none (no gres on a shared partition, or not allocated yet), per_node (reported "
                "before the portal read AllocTRES this way: counted per node)."
            },
            "first_reported_at": {"help_text": "When a report first listed the job."},
            "last_reported_at": {"help_text": "When a report last listed the job."},
        }
