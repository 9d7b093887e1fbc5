"""API shapes of GPU health: the exporter text a cluster posts, and health events as the portal keeps them."""

from __future__ import annotations

from rest_framework import serializers

from portal import serializers as api
from workloads.health.models import HealthEvent
from workloads.reporting.ingest import report_field


class HealthIngestSerializer(api.Serializer):
    text_field = "metrics"  # a text/plain body is this field

    metrics = report_field(
        "One node's dcgm-exporter or Neuron exporter scrape (`curl http://<node>:9400/metrics`), in Prometheus's "
        "text format, or one report of `neuron-monitor`'s JSON output (told apart by its opening brace).",
        allow_blank=True,
    )
    host = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=255,
        help_text="The node it came from (Slurm node name, host name or instance id), for samples without a "
        "Hostname label.",
    )


class HealthIngestResultSerializer(serializers.Serializer):
    readings = serializers.IntegerField(help_text="Faults read (one per GPU and kind).")
    opened = serializers.IntegerField(help_text="Health events opened by this report.")
    resolved = serializers.IntegerField(help_text="Health events resolved: their readings are normal again.")
    nodes = serializers.IntegerField(help_text="Nodes the report was about.")


class HealthEventSerializer(api.ModelSerializer):
    organization = api.SlugRelatedField(slug_field="slug", read_only=True)
    cluster_name = serializers.CharField(source="cluster.name", read_only=True, help_text="Name of that cluster.")
    open = serializers.BooleanField(source="is_open", read_only=True, help_text="The condition still holds.")

    class Meta:
        model = HealthEvent
        fields = [
            "id",
            "organization",
            "cluster",
            "cluster_name",
            "instance_id",
            "group_name",
            "gpu",
            "kind",
            "code",
            "severity",
            "action",
            "source",
            "message",
            "open",
            "observed_at",
            "resolved_at",
            "case",
        ]
        read_only_fields = fields
        extra_kwargs = {
            "cluster": {"help_text": "Id of the cluster the node belongs to."},
            "instance_id": {"help_text": "EC2 instance id of the node (i-…)."},
            "group_name": {"help_text": "The node's instance group; empty when not known."},
            "gpu": {"help_text": "Index of the GPU on the node; null when the event is about the node as a whole."},
            "kind": {"help_text": "What is wrong: a node failure or replacement, a GPU XID error, ECC errors, …"},
            "code": {"help_text": "The XID error code of a gpu_xid event; null for other kinds."},
            "severity": {"help_text": "info, warning or critical; a critical event opens or joins a support case."},
            "action": {
                "help_text": "What to do about it: monitor, restart job, reset GPU, reboot node or replace node; empty "
                "when there is no recommendation."
            },
            "source": {
                "help_text": "Where the fault was read: cloud (AWS's node status), prometheus, or push (exporter text "
                "the cluster posted)."
            },
            "message": {"help_text": "The fault in words; empty when its source gives none."},
            "observed_at": {"help_text": "When the fault was first observed."},
            "resolved_at": {"help_text": "When the condition cleared; null while it holds."},
            "case": {"help_text": "Id of the support case the event opened or joined; null when none."},
        }
