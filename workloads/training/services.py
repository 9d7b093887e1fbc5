"""The runs of a workload: found by name, or started by the first progress posted to them.

A run is named by whoever posts (the reporter's `--run`, a script's `run`, the upload form): the same name is the
same run continuing (a restarted job), a new name a new run (a new phase). Its settings (sequence length,
accelerators) are set by its first post, from the poster or the log, and never change within the run: a post
saying otherwise is refused, since every token count of the run was computed with them.
"""

from __future__ import annotations

from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from tenants.access import get_org_access_or_404
from workloads.clusters.models import Cluster
from workloads.records.models import Workload
from workloads.records.services import READ_ONLY
from workloads.training.ingest import Outcome, record_log, record_points
from workloads.training.logs import Point
from workloads.training.models import RUN_NAME, LogSource, TrainingRun

DEFAULT_RUN = "main"


def require_progress_writer(user, workload: Workload) -> None:
    """Members and admins of the workload's organization post its progress; viewers and program staff read it."""
    access = get_org_access_or_404(user, workload.organization.slug)
    access.require(access.can_write_workloads, READ_ONLY)


def run_for(
    *,
    workload: Workload,
    name: str = DEFAULT_RUN,
    phase: str | None = None,
    sequence_length: int | None = None,
    accelerators: int | None = None,
    cluster: Cluster | None = None,
    actor=None,
) -> TrainingRun:
    """The workload's run of this name, started if it is new. Raises ValidationError for a bad name, or settings
    that contradict the run's."""
    name = (name or DEFAULT_RUN).strip()
    try:
        RUN_NAME(name)
    except ValidationError as error:
        raise ValidationError({"run": error.messages}) from None
    if phase and phase not in Workload.Phase.values:
        raise ValidationError({"phase": [_("Not a phase: %(phase)s.") % {"phase": phase}]})
    runs = TrainingRun.objects.for_org(workload.organization).filter(workload=workload)
    run = runs.filter(name=name).first()
    if run is None:
        try:
            with transaction.atomic():
                run = TrainingRun.objects.create(
                    organization=workload.organization,
                    workload=workload,
                    name=name,
                    phase=phase or workload.phase,
                    sequence_length=sequence_length,
                    accelerators=accelerators,
                    cluster=cluster,
                    created_by=actor if actor is not None and actor.is_authenticated else None,
                )
        except IntegrityError:  # started by a concurrent post a moment ago
            run = runs.get(name=name)
        else:
            return run
    settings = {"sequence_length": sequence_length, "accelerators": accelerators}
    errors = {}
    if phase and phase != run.phase:
        errors["phase"] = [
            _("Run %(run)s is %(phase)s: a new phase is a new run, under a new name.")
            % {"run": run.name, "phase": run.get_phase_display()}
        ]
    for field, value in settings.items():
        kept = getattr(run, field)
        if value and kept and value != kept:
            errors[field] = [
                _("Run %(run)s has %(kept)s; it cannot change within a run: post to a new run.")
                % {"run": run.name, "kept": f"{kept:,}"}
            ]
    if errors:
        raise ValidationError(errors)
    changed = [field for field, value in settings.items() if value and not getattr(run, field)]
    for field in changed:
        setattr(run, field, settings[field])
    if cluster is not None and run.cluster_id is None:
        run.cluster = cluster
        changed.append("cluster")
    if changed:
        run.save(update_fields=changed)
    run.workload = workload
    return run


@transaction.atomic
def post_progress(
    *,
    workload: Workload,
    run: str = DEFAULT_RUN,
    phase: str | None = None,
    sequence_length: int | None = None,
    accelerators: int | None = None,
    cluster: Cluster | None = None,
    actor=None,
    text: str | None = None,
    points: list[Point] | None = None,
    kind: str = LogSource.Kind.UPLOAD,
    source: str = "api",
    offset: int | None = None,
    ended_at: datetime | None = None,
    log_format: str | None = None,
) -> Outcome:
    """One post of progress (a log's text, or points) to a run, started if new; refused whole (the run too) when
    the run's settings or the log's times say no."""
    found = run_for(
        workload=workload, name=run, phase=phase, sequence_length=sequence_length, accelerators=accelerators,
        cluster=cluster, actor=actor,
    )  # fmt: skip
    if points is not None:
        return record_points(run=found, points=points, ended_at=ended_at)
    return record_log(
        run=found, text=text or "", kind=kind, source=source, offset=offset, ended_at=ended_at, log_format=log_format
    )
