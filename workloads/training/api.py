"""REST API of training progress.

- `POST /api/v1/clusters/{id}/progress/`: a log chunk from the cluster's reporter (its token; a workload of
  another organization is a 404, like a cluster that is not yours) or a person who acts in the organization.
- `GET /api/v1/workloads/{id}/progress/`: the workload's tokens against plan, finish date and each run's figures
  with a downsampled series. `POST` the same URL: JSON points, or a log's text, from a script.
"""

from __future__ import annotations

from datetime import timedelta

from django.core.exceptions import ValidationError as DjangoValidationError
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import exceptions, serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from portal import serializers as api
from portal.periods import this_week
from tenants.access import require_writer
from workloads.records.models import Workload
from workloads.reporting.ingest import ClusterIngestView, CountedIngest
from workloads.training import series as progress_series
from workloads.training.figures import RunFigures, workload_progress
from workloads.training.goodput import HOURS, week_goodput
from workloads.training.models import LogSource
from workloads.training.serializers import ProgressLogSerializer, ProgressOutcomeSerializer, ProgressPostSerializer
from workloads.training.services import post_progress, require_progress_writer


def _post(workload: Workload, data: dict, **fields):
    """The post's run fields and the rest, to the one service."""
    return post_progress(
        workload=workload,
        run=data.get("run", "main"),
        phase=data.get("phase"),
        sequence_length=data.get("sequence_length"),
        accelerators=data.get("accelerators"),
        ended_at=data.get("ended_at"),
        log_format=data.get("log_format"),
        **fields,
    )


class ClusterProgressView(ClusterIngestView):
    serializer_class = ProgressLogSerializer
    items_field = "points"  # /metrics counts the progress points a post carried

    @extend_schema(
        summary="Post new lines of a training log: a run's progress (the reporter's `progress` command)",
        description="Body: JSON (the fields below), or the log's text as text/plain with the other fields in the "
        "query string. The format is detected (Megatron-LM/Core, Megatron-DeepSpeed, NeMo 2/Lightning, torchtitan, "
        "Hugging Face Trainer, DeepSpeed, AWS Neuron) unless `log_format` names it. With `source` and `offset`, text "
        "the portal has read already is skipped, so a chunk sent twice changes nothing. Lines that are not progress "
        "lines are counted and skipped; a progress line that cannot be read, a negative step time or tokens going down "
        "without a restart are refused one by one and named in `problems`, the rest kept. The workload must be of "
        "the cluster's organization: any other is a 404.",
        request={"application/json": ProgressLogSerializer, "text/plain": OpenApiTypes.STR},
        responses={200: ProgressOutcomeSerializer},
    )
    def post(self, request, pk: int, format=None):
        return super().post(request, pk, format)

    def ingest(self, cluster, data: dict, *, actor) -> tuple[dict, int]:
        workload = Workload.objects.for_org(cluster.organization).filter(pk=data["workload"]).first()
        if workload is None:
            raise exceptions.NotFound(_("No such workload."))
        if actor is not None:
            require_progress_writer(actor, workload)  # a person posts as on the workload's own endpoint
        outcome = _post(
            workload,
            data,
            cluster=cluster,
            actor=actor,
            text=data["log"],
            kind=LogSource.Kind.REPORTER if actor is None else LogSource.Kind.UPLOAD,
            source=data.get("source") or "posted",
            offset=data.get("offset"),
        )
        return outcome.as_dict(), status.HTTP_200_OK


class SampleSerializer(serializers.Serializer):
    at = serializers.DateTimeField(help_text="The end of the sample (an iteration, or a bucket of hours).")
    iteration = serializers.IntegerField(help_text="The last iteration in the sample.")
    tokens_trained = serializers.IntegerField(
        source="tokens", allow_null=True, help_text="Tokens trained at that iteration."
    )
    loss = serializers.FloatField(allow_null=True, help_text="Training loss (the bucket's mean).")
    tokens_per_second = serializers.FloatField(allow_null=True, help_text="Throughput of the whole job.")
    achieved_mfu = serializers.FloatField(
        source="mfu", allow_null=True, help_text="Model FLOPs utilization, 0–1, from the throughput."
    )
    logged_tflops = serializers.FloatField(allow_null=True, help_text="TFLOP/s per accelerator, as logged.")
    restarts = serializers.IntegerField(help_text="Restarts in the sample.")


class RunSummarySerializer(serializers.Serializer):
    name = serializers.CharField(source="run.name", help_text="The run's name in the workload.")
    phase = serializers.CharField(source="run.phase", help_text="The run's phase.")
    log_format = serializers.CharField(source="run.log_format", help_text="The log format read; empty for points.")
    planned_tokens = serializers.IntegerField(allow_null=True, help_text="The run's plan, else the workload's.")
    tokens_trained = serializers.IntegerField(
        source="tokens", help_text="Tokens trained (at the last iteration; lost work not counted)."
    )
    fraction = serializers.FloatField(allow_null=True, help_text="Tokens ÷ planned tokens.")
    sequence_length = serializers.IntegerField(
        source="run.sequence_length", allow_null=True, help_text="Tokens per sample."
    )
    accelerators = serializers.IntegerField(allow_null=True, help_text="GPUs or Trainium chips of the run.")
    peak_tflops = serializers.FloatField(allow_null=True, help_text="Dense BF16 peak of one accelerator.")
    last_iteration = serializers.IntegerField(source="run.last_iteration", allow_null=True, help_text="Last step.")
    first_point_at = serializers.DateTimeField(source="run.first_point_at", allow_null=True, help_text="First step.")
    last_point_at = serializers.DateTimeField(source="run.last_point_at", allow_null=True, help_text="Last step.")
    points = serializers.IntegerField(
        source="run.points", help_text="Progress lines recorded, first time (each an iteration, or a logging interval)."
    )
    restarts = serializers.IntegerField(source="run.restarts", help_text="Times the iteration went back.")
    lost_iterations = serializers.IntegerField(source="run.lost_iterations", help_text="Iterations computed again.")
    skipped_iterations = serializers.IntegerField(
        source="run.skipped_iterations",
        help_text="Iterations the run skipped (loss scaling overflows, as the log counts them).",
    )
    nan_iterations = serializers.IntegerField(source="run.nan_iterations", help_text="Iterations with a nan loss.")
    implausible_points = serializers.IntegerField(
        source="run.implausible_points", help_text="Iterations whose logged figures cannot be: never averaged."
    )
    last_loss = serializers.FloatField(source="run.last_loss", allow_null=True, help_text="The last loss logged.")
    tokens_per_second = serializers.FloatField(allow_null=True, help_text="Throughput while training.")
    recent_tokens_per_second = serializers.FloatField(
        allow_null=True, help_text="Tokens gained in the last 7 days ÷ 7 days (idle time included)."
    )
    achieved_mfu = serializers.FloatField(
        source="mfu", allow_null=True, help_text="6 · N · tokens/s ÷ (accelerators × peak), 0–1 (beside expected_mfu)."
    )
    computed_tflops = serializers.FloatField(allow_null=True, help_text="6 · N · tokens/s ÷ accelerators, TFLOP/s.")
    logged_tflops = serializers.FloatField(allow_null=True, help_text="Mean logged TFLOP/s per accelerator.")
    productive_hours = serializers.FloatField(help_text="Hours of first-time, good iterations.")
    lost_hours = serializers.FloatField(help_text="Hours spent computing iterations again after restarts.")
    skipped_hours = serializers.FloatField(help_text="Hours of skipped and nan iterations.")
    series = serializers.SerializerMethodField(help_text="The run over time, downsampled (`?points=`).")

    @extend_schema_field(SampleSerializer(many=True))
    def get_series(self, figures: RunFigures) -> list:
        points = self.context.get("points", 0)
        return SampleSerializer(progress_series.run_series(figures, limit=points), many=True).data if points else []


class FinishSerializer(serializers.Serializer):
    remaining_tokens = serializers.IntegerField(help_text="Planned tokens not yet trained.")
    on = serializers.DateTimeField(allow_null=True, help_text="When the plan is reached at the last 7 days' rate.")
    allocation_ends = serializers.DateTimeField(allow_null=True, help_text="The end of the allocation's last day.")
    at_risk = serializers.BooleanField(help_text="The plan is reached after the allocation ends, or never.")
    extra_instance_days = serializers.FloatField(
        allow_null=True, help_text="At risk: instance-days beyond the allocation at this rate."
    )


class GoodputSerializer(serializers.Serializer):
    week = serializers.DateField(help_text="The Monday of the ISO week (program time).")
    goodput = serializers.FloatField(allow_null=True, help_text="Productive ÷ held, 0–1; null when nothing was held.")
    held = serializers.FloatField(help_text="Hours the capacity was held in the week (up to now).")
    productive = serializers.FloatField(help_text="Hours of first-time iterations that counted.")
    down = serializers.FloatField(help_text="Hours held with no node of the workload's clusters running.")
    no_job = serializers.FloatField(help_text="Hours with nodes running and no job.")
    startup = serializers.FloatField(help_text="Hours from a job's start to its first iteration.")
    lost = serializers.FloatField(help_text="Hours computing iterations again after restarts.")
    skipped = serializers.FloatField(help_text="Hours of skipped and nan iterations.")
    no_progress = serializers.FloatField(help_text="Hours of a job running with no iteration logged.")


class ProgressSummarySerializer(serializers.Serializer):
    workload = serializers.IntegerField(help_text="Id of the workload.")
    planned_tokens = serializers.IntegerField(allow_null=True, help_text="The workload's target tokens.")
    tokens_trained = serializers.IntegerField(help_text="Tokens trained, every run.")
    fraction = serializers.FloatField(allow_null=True, help_text="Tokens ÷ planned tokens.")
    finish = FinishSerializer(allow_null=True, help_text="Null without a plan.")
    runs = RunSummarySerializer(many=True, help_text="The workload's runs, oldest first.")
    goodput = GoodputSerializer(many=True, help_text="Last week's and this week's goodput, with where the time went.")


class SeriesQuery(api.QuerySerializer):
    """The query string of the progress summary (a plain serializer: a query carries format and other parameters)."""

    points = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=progress_series.MAX_LIMIT,
        default=progress_series.DEFAULT_LIMIT,
        help_text="Samples per run's series (0: none).",
    )


def summary(workload: Workload, *, points: int) -> dict:
    progress = workload_progress(workload)

    finish = progress.finish
    return {
        "workload": workload.pk,
        "planned_tokens": progress.planned_tokens,
        "tokens_trained": progress.tokens,
        "fraction": progress.fraction,
        "finish": FinishSerializer(finish).data if finish else None,
        "runs": RunSummarySerializer(progress.runs, many=True, context={"points": points}).data,
        "goodput": [goodput_of(workload, week) for week in (this_week() - timedelta(days=7), this_week())],
    }


def goodput_of(workload: Workload, week) -> dict:
    figures = week_goodput([workload], week=week)[workload.pk]
    return GoodputSerializer({"week": week, "goodput": figures.goodput, **{h: getattr(figures, h) for h in HOURS}}).data


class WorkloadProgressView(CountedIngest, APIView):
    permission_classes = [IsAuthenticated]
    items_field = "points"  # /metrics counts each post and the progress points it carried
    model = Workload  # tests/test_tenant_gate.py: the id in the path names a workload

    def workload(self, request, pk: int) -> Workload:
        workloads = Workload.objects.visible_to(request.user).select_related(
            "organization", "allocation__pool__instance_type"
        )
        return get_object_or_404(workloads, pk=pk)

    @extend_schema(
        summary="A workload's training progress: tokens against plan, finish date, each run's figures and series",
        parameters=[SeriesQuery],
        responses={200: ProgressSummarySerializer},
    )
    def get(self, request, pk: int, format=None):
        workload = self.workload(request, pk)
        query = SeriesQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        return Response(summary(workload, points=query.validated_data["points"]))

    @extend_schema(
        summary="Post a run's progress from a script: JSON points, or a log's text",
        description="Points are (run, iteration): posting the same points again changes nothing; an iteration at or "
        "below the run's last one with other values is a restart from a checkpoint, its iterations up to the highest "
        "reached counted as lost work. A nan is sent as null. Refused points (a negative step time, tokens going down "
        "without a restart) are named in `problems`; the others are kept.",
        request=ProgressPostSerializer,
        responses={200: ProgressOutcomeSerializer},
    )
    def post(self, request, pk: int, format=None):
        require_writer(request.user)
        workload = self.workload(request, pk)
        require_progress_writer(request.user, workload)
        payload = ProgressPostSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        try:
            if "points" in data:
                outcome = _post(workload, data, actor=request.user, points=payload.as_points(data["points"]))
            else:
                outcome = _post(workload, data, actor=request.user, text=data["log"], kind=LogSource.Kind.UPLOAD)
        except DjangoValidationError as error:
            raise exceptions.ValidationError(error.message_dict) from None
        return Response(outcome.as_dict())
