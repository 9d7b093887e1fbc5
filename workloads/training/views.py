"""Training progress on the workload page (`progress_context`, read by workloads.records.views), the log upload page
and the hourly CSV. A workload comes from `Workload.objects.visible_to(user)`: another organization's is a 404."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.views.decorators.http import require_GET

from portal.exports import csv_response
from portal.forms import apply_errors
from portal.pages import render_form
from portal.periods import this_week
from tenants.access import get_org_access_or_404
from workloads.records.models import Workload
from workloads.training import charts
from workloads.training.figures import expected_mfu, throughput, workload_progress
from workloads.training.forms import LogUploadForm
from workloads.training.goodput import week_goodput
from workloads.training.models import LogSource, ProgressHour, TrainingRun
from workloads.training.series import run_series
from workloads.training.services import post_progress, require_progress_writer


def progress_context(workload: Workload, *, can_write: bool) -> dict:
    """What the workload page shows of its training: figures, charts with their tables, this week's goodput, the
    runs and where their progress came from. A bounded number of reads whatever the runs' length."""
    now = timezone.now()
    progress = workload_progress(workload, now=now)
    samples = {figures.run.pk: run_series(figures) for figures in progress.runs}
    expected = expected_mfu(workload)
    week = this_week()
    sources = LogSource.objects.for_org(workload.organization).filter(run__workload=workload).select_related("run")
    return {
        "progress": progress,
        "expected_mfu": expected,
        "goodput": week_goodput([workload], week=week, now=now)[workload.pk],
        "goodput_week": week,
        "progress_charts": [
            chart
            for chart in (
                charts.tokens_chart(progress, samples, now=now),
                charts.loss_chart(progress, samples),
                charts.mfu_chart(progress, samples, expected=expected),
            )
            if chart is not None
        ],
        "log_sources": sources.order_by("-updated_at")[:20],
        "can_upload_log": can_write,
    }


def _workload(request, pk: int) -> Workload:
    workloads = Workload.objects.visible_to(request.user).select_related(
        "organization", "allocation__pool__instance_type", "allocation__request"
    )
    return get_object_or_404(workloads, pk=pk)


UPLOAD_TEMPLATE = "workloads/training/log_upload.html"


@login_required
def log_upload(request, pk: int):
    """Upload a training log to one of the workload's runs; the page then says what was read, kept and refused."""
    workload = _workload(request, pk)
    require_progress_writer(request.user, workload)
    form = LogUploadForm(request.POST or None, request.FILES or None)
    outcome = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            outcome = post_progress(
                workload=workload,
                run=data["run"],
                phase=data["phase"] or None,
                sequence_length=data["sequence_length"],
                accelerators=data["accelerators"],
                actor=request.user,
                text=data["log"],
                kind=LogSource.Kind.UPLOAD,
                source=request.FILES["log"].name or "upload",
                ended_at=data["ended_at"],
                log_format=data["format"] or None,
            )
        except ValidationError as error:
            apply_errors(form, error)
    runs = TrainingRun.objects.for_org(workload.organization).filter(workload=workload).order_by("name")
    context = {"workload": workload, "org": workload.organization, "form": form, "outcome": outcome, "runs": runs}
    return render_form(request, UPLOAD_TEMPLATE, context, invalid=bool(form.errors))


log_upload.tenant_model = Workload


@login_required
@require_GET
def progress_export(request, pk: int):
    """Every run's hourly sums, with the figures of each hour (the page's and the API's functions)."""
    workload = _workload(request, pk)
    get_org_access_or_404(request.user, workload.organization.slug)
    progress = workload_progress(workload)
    figures = {item.run.pk: item for item in progress.runs}
    response, writer = csv_response(f"training-{workload.organization.slug}-{workload.pk}")
    writer.writerow(
        [
            "run", "hour_utc", "first_iteration", "last_iteration", "iterations", "tokens", "new_tokens",
            "productive_hours", "lost_hours", "skipped_hours", "loss_mean", "tokens_per_second", "mfu",
            "logged_tflops_per_accelerator", "restarts",
        ]
    )  # fmt: skip
    hours = ProgressHour.objects.for_org(workload.organization).filter(run__in=list(figures)).order_by("run", "hour")
    for row in hours.iterator(chunk_size=2000):
        item = figures[row.run_id]
        rate = throughput(row.timed_tokens, row.productive_seconds)
        writer.writerow(
            [
                item.run.name, row.hour.isoformat(), row.first_iteration, row.last_iteration, row.iterations,
                row.tokens_end, row.new_tokens, row.productive_seconds / 3600, row.lost_seconds / 3600,
                row.skipped_seconds / 3600, row.loss_sum / row.loss_count if row.loss_count else None, rate,
                item.mfu_at(rate),
                row.tflops_logged_sum / row.tflops_logged_count if row.tflops_logged_count else None, row.restarts,
            ]
        )  # fmt: skip
    return response


progress_export.tenant_model = Workload
