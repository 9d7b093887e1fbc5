"""API shapes of interconnect validation: the nccl-tests log a cluster posts, and the judged run."""

from __future__ import annotations

from rest_framework import serializers

from portal import serializers as api
from workloads.reporting.ingest import report_field
from workloads.validation.models import NcclValidation
from workloads.validation.services import MAX_NODES


class NcclLogSerializer(api.Serializer):
    text_field = "log"  # a text/plain body is this field

    log = report_field("An nccl-tests all_reduce_perf log, as printed.")
    nodes = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_NODES,
        help_text="Nodes the test ran on; needed when the log has no '#  Rank … on <host>' lines.",
    )


class NcclValidationSerializer(api.ModelSerializer):
    organization = api.SlugRelatedField(slug_field="slug", read_only=True)
    cluster_name = serializers.CharField(source="cluster.name", read_only=True)
    rows = serializers.ListField(
        child=serializers.ListField(child=serializers.FloatField()),
        read_only=True,
        help_text="[message size in bytes, out-of-place bus bandwidth, in-place bus bandwidth] per row, GB/s.",
    )

    class Meta:
        model = NcclValidation
        fields = [
            "id",
            "organization",
            "cluster",
            "cluster_name",
            "instance_type",
            "nodes",
            "ranks",
            "hosts",
            "verdict",
            "reasons",
            "peak_busbw_gbps",
            "peak_size_bytes",
            "avg_busbw_gbps",
            "out_of_bounds",
            "wrong_values",
            "elided",
            "baseline_busbw_gbps",
            "baseline_nodes",
            "min_fraction",
            "fraction",
            "rows",
            "case",
            "submitted_at",
        ]
        read_only_fields = fields
