"""API shapes of training progress: what a reporter, a script or a person posts (a log chunk, or JSON points), and
the summary and downsampled series the API answers."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from portal import serializers as api
from workloads.records.models import Workload
from workloads.reporting.ingest import report_field
from workloads.training.ingest import EARLIEST, MAX_LOSS, MAX_STEP_SECONDS
from workloads.training.logs import FORMATS, Point
from workloads.training.models import MAX_ACCELERATORS, MAX_SEQUENCE_LENGTH

MAX_POINTS_POSTED = 10_000
MAX_ITERATION = 2**62
MAX_COUNT = 2**62
NOT_FINITE = _("A finite number: send null for a value the run did not log (nan).")


def plausible_time(value: datetime) -> None:
    if not EARLIEST <= value <= timezone.now() + timedelta(days=1):
        raise serializers.ValidationError(_("A time between 2000 and tomorrow."))


class FiniteFloatField(serializers.FloatField):
    """A logged figure: a number, or null when the log printed nan. NaN and infinity are refused, never stored."""

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("allow_null", True)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not math.isfinite(value):
            raise serializers.ValidationError(NOT_FINITE)
        return value


def format_field() -> serializers.ChoiceField:
    # `log_format`, not `format`: DRF reads ?format= for itself (json, api), so a text/plain post could not name it.
    return serializers.ChoiceField(
        choices=[(name, parser.label) for name, parser in FORMATS.items()],
        required=False,
        help_text="The log's format, when detection should not decide: " + ", ".join(FORMATS) + ".",
    )


class RunFields(api.Serializer):
    """Which run of the workload the progress belongs to, and its settings (first post only; never changed)."""

    run = serializers.RegexField(
        r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$",
        required=False,
        default="main",
        help_text="The run's name in the workload (default main): a restarted job posts to the same run, a new "
        "phase (continued pre-training, SFT) to a new one.",
    )
    phase = serializers.ChoiceField(
        choices=Workload.Phase.choices,
        required=False,
        help_text="The run's phase, when it starts (default: the workload's); a run keeps its phase.",
    )
    sequence_length = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_SEQUENCE_LENGTH,
        help_text="Tokens per sample, when the log does not print it (Megatron's argument dump does): tokens "
        "trained = consumed samples × sequence length.",
    )
    accelerators = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_ACCELERATORS,
        help_text="GPUs or Trainium chips the run trains on (default: the log's world size, else the workload's "
        "TP × PP × DP, in chips on Trainium).",
    )
    ended_at = serializers.DateTimeField(
        required=False,
        validators=[plausible_time],
        help_text="When the last line was written (a log file's modification time): needed for a log that prints "
        "no times (its lines are counted back from it, step time by step time); points without a time default to "
        "now. Between 2000 and tomorrow.",
    )


class ProgressLogSerializer(RunFields):
    """A log chunk, as the reporter or a person posts it to a cluster's progress endpoint."""

    text_field = "log"

    workload = serializers.IntegerField(
        min_value=1, max_value=2**63 - 1, help_text="Id of the workload (of the cluster's organization) it trains."
    )
    log = report_field("The new lines of the training log, as printed (up to 20 MB a post).")
    source = serializers.CharField(
        max_length=500,
        required=False,
        help_text="The log's path on the cluster (the reporter's): with `offset`, a chunk sent again is skipped.",
    )
    offset = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=2**62,
        help_text="Byte offset of `log` in `source`. Text before what the portal has read of the source is skipped.",
    )
    log_format = format_field()

    def validate(self, data: dict) -> dict:
        if ("offset" in data) != ("source" in data):
            raise serializers.ValidationError({"offset": [_("Give source and offset together, or neither.")]})
        return data


class PointSerializer(api.Serializer):
    iteration = serializers.IntegerField(min_value=0, max_value=MAX_ITERATION, help_text="The optimizer step.")
    time = serializers.DateTimeField(
        required=False,
        validators=[plausible_time],
        help_text="When the step ended, between 2000 and tomorrow (default: counted back from ended_at, else now).",
    )
    consumed_samples = serializers.IntegerField(
        required=False, allow_null=True, min_value=0, max_value=MAX_COUNT, help_text="Samples trained so far."
    )
    tokens_trained = serializers.IntegerField(
        required=False, allow_null=True, min_value=0, max_value=MAX_COUNT, help_text="Tokens trained so far."
    )
    global_batch_size = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, max_value=MAX_COUNT, help_text="Samples in a step."
    )
    loss = FiniteFloatField(min_value=-MAX_LOSS, max_value=MAX_LOSS, help_text="The training loss; null when nan.")
    learning_rate = FiniteFloatField(help_text="The learning rate.")
    grad_norm = FiniteFloatField(help_text="The gradient norm; null when nan.")
    step_seconds = FiniteFloatField(min_value=0, max_value=MAX_STEP_SECONDS, help_text="Seconds the step took.")
    tflops_per_accelerator = FiniteFloatField(min_value=0, help_text="TFLOP/s per accelerator, as logged.")
    tokens_per_second = FiniteFloatField(min_value=0, help_text="Tokens per second of the whole job, as logged.")
    skipped_iterations = serializers.IntegerField(
        required=False, default=0, min_value=0, max_value=2**31 - 1, help_text="Steps skipped (loss scaling)."
    )
    nan_iterations = serializers.IntegerField(
        required=False, default=0, min_value=0, max_value=2**31 - 1, help_text="Steps whose loss was nan."
    )


class ProgressPostSerializer(RunFields):
    """A person's or a script's post to a workload: JSON points, or a log's text."""

    points = PointSerializer(
        many=True,
        required=False,
        max_length=MAX_POINTS_POSTED,
        help_text=f"Iterations, in the order they ran (at most {MAX_POINTS_POSTED:,} a post).",
    )
    log = serializers.CharField(
        required=False,
        trim_whitespace=False,
        max_length=2_000_000,
        help_text="A log's text instead of points (larger logs: the upload page or the cluster endpoint).",
    )
    log_format = format_field()

    def validate(self, data: dict) -> dict:
        if ("points" in data) == ("log" in data):
            raise serializers.ValidationError({"points": [_("Send points or a log, one of the two.")]})
        if "points" in data and not data["points"]:
            raise serializers.ValidationError({"points": [_("No points: send at least one.")]})
        return data

    @staticmethod
    def as_points(rows: list[dict]) -> list[Point]:
        return [
            Point(
                iteration=row["iteration"],
                line=number,
                at=row.get("time"),
                consumed_samples=row.get("consumed_samples"),
                tokens=row.get("tokens_trained"),
                global_batch_size=row.get("global_batch_size"),
                loss=row.get("loss"),
                learning_rate=row.get("learning_rate"),
                grad_norm=row.get("grad_norm"),
                step_seconds=row.get("step_seconds"),
                tflops_per_accelerator=row.get("tflops_per_accelerator"),
                tokens_per_second=row.get("tokens_per_second"),
                skipped_iterations=row.get("skipped_iterations", 0),
                nan_iterations=row.get("nan_iterations", 0),
            )
            for number, row in enumerate(rows, start=1)
        ]


class ProgressOutcomeSerializer(serializers.Serializer):
    format = serializers.CharField(allow_null=True, help_text="The log format read; null for points.")
    lines = serializers.IntegerField(help_text="Lines of new text read.")
    points = serializers.IntegerField(help_text="Iterations found in the post.")
    created = serializers.IntegerField(help_text="Iterations recorded for the first time.")
    computed_again = serializers.IntegerField(help_text="Iterations computed again after a restart (lost work).")
    unchanged = serializers.IntegerField(help_text="Iterations already recorded with these values (a re-send).")
    restarts = serializers.IntegerField(help_text="Times the iteration went back (a restart from a checkpoint).")
    implausible = serializers.IntegerField(help_text="Iterations whose figures cannot be (above the peak): kept, "
                                           "flagged, never averaged.")  # fmt: skip
    other_lines = serializers.IntegerField(help_text="Lines that are not progress lines, skipped.")
    refused_lines = serializers.IntegerField(help_text="Progress lines that could not be read, or were refused.")
    problems = serializers.ListField(child=serializers.CharField(), help_text="The first 20, each naming its line.")
    already_read_bytes = serializers.IntegerField(help_text="Bytes of the chunk read before (a chunk sent again).")
