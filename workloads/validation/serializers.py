"""API shapes of interconnect validation: the nccl-tests log a cluster posts, and the judged run."""

from __future__ import annotations

from rest_framework import serializers

from portal import serializers as api
from workloads.reporting.ingest import report_field
from workloads.validation.models import NcclValidation
from workloads.validation.services import MAX_NODES


class NcclLogSerializer(api.Serializer):
    text_field = "log"  # a text/plain body is this field

    log = report_field("An nccl-tests log (all_reduce_perf, alltoall_perf, ...), as printed.")
    collective = serializers.RegexField(
        r"^[a-z][a-z0-9_]{0,39}$",
        required=False,
        help_text="The collective the log ran (all_reduce, alltoall, ...), for logs of nccl-tests before 2.16 that "
        "do not print it; refused when the log names another.",
    )
    nodes = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_NODES,
        help_text="Nodes the test ran on; needed when the log has no '#  Rank … on <host>' lines.",
    )


class NcclValidationSerializer(api.ModelSerializer):
    organization = api.SlugRelatedField(slug_field="slug", read_only=True)
    cluster_name = serializers.CharField(source="cluster.name", read_only=True, help_text="Name of that cluster.")
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
            "collective",
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
        extra_kwargs = {
            "cluster": {"help_text": "Id of the cluster the test ran on."},
            "instance_type": {"help_text": "EC2 instance type of the nodes tested."},
            "nodes": {"help_text": "Nodes the test ran on."},
            "collective": {
                "help_text": "The collective the run measured (all_reduce, alltoall, ...); it is judged only against "
                "a baseline of that collective. Empty when neither the log nor the poster said."
            },
            "ranks": {"help_text": "Ranks of the run (one per GPU, usually); null when the log does not list them."},
            "hosts": {"help_text": "Host names of the nodes the test ran on, as the log names them."},
            "verdict": {
                "help_text": "passed; suspect (the peak is under min_fraction of the baseline, or values were "
                "wrong); or no_baseline (not judged: no baseline for its collective, type and node count)."
            },
            "reasons": {"help_text": "Why the run is suspect or has no baseline, in words; empty when it passed."},
            "peak_busbw_gbps": {
                "help_text": "The highest bus bandwidth of any message size, out-of-place or in-place, in GB/s."
            },
            "peak_size_bytes": {"help_text": "The message size the peak was reached at, in bytes."},
            "avg_busbw_gbps": {
                "help_text": "nccl-tests' average bus bandwidth over every size, in GB/s; null when the log has no "
                "summary."
            },
            "out_of_bounds": {
                "help_text": "Out-of-bounds values, as nccl-tests' summary counts them; null when the log has no "
                "summary."
            },
            "wrong_values": {
                "help_text": "Out-of-bounds values plus nccl-tests' #wrong over every row: above 0, the collective "
                "returned bad data; 0 when not judged (no baseline)."
            },
            "elided": {
                "help_text": "True when the log had rows left out (a '...' line): the average then covers rows not "
                "shown."
            },
            "baseline_busbw_gbps": {
                "help_text": "The baseline's bus bandwidth when the run was judged, in GB/s; null without a baseline."
            },
            "baseline_nodes": {"help_text": "The node count of that baseline; null without a baseline."},
            "min_fraction": {
                "help_text": "The share of the baseline below which a run is suspect, e.g. 0.90; null without a "
                "baseline."
            },
            "fraction": {"help_text": "The peak as a share of the baseline, e.g. 0.97; null without a baseline."},
            "case": {"help_text": "Id of the support case a suspect run opened or joined; null when none."},
            "submitted_at": {"help_text": "When the log was posted."},
        }
