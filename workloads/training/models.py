"""Training progress: a workload's runs, the iterations they logged, where they started and restarted, and hourly
sums for the charts.

- A **TrainingRun** is one phase of a workload's training (pre-training, then continued pre-training, then SFT are
  three runs); a job restarted from a checkpoint is the same run continuing. It keeps its running state (the last
  iteration, the tokens trained, counters) so a summary reads one row, never its points.
- A **ProgressPoint** is one iteration of a run as its log printed it: unique on (run, iteration), so sending the
  same lines twice changes nothing. An iteration printed again after a restart is computed again: the point takes
  the new values and the work is counted as lost. A **RunStart** marks the run's first iteration, each restart
  (the iterations went back) and each resumption after a silence.
- A **ProgressHour** sums a run's work per hour (iterations computed, their seconds, lost and skipped seconds,
  tokens at the hour's last iteration, loss, throughput): the charts, the last 7 days' rate and goodput read these
  (about 4,400 rows for a six-month run), never 1.5 million points.
- A **LogSource** is one log a run's progress came from (a file the reporter follows, an upload, a script's
  posts): how many bytes and lines of it were read, so a chunk sent again is recognized and skipped.

Writes go through workloads.training.ingest; figures are computed in workloads.training.figures.
"""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from tenants.capacity.estimate import MAX_TOKENS, TOKEN_COUNT
from tenants.models import InstanceType, Organization, TenantQuerySet
from workloads.clusters.models import Cluster
from workloads.records.models import TOO_MANY_TOKENS, Workload

RUN_NAME = RegexValidator(
    r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$",
    _("Use letters, digits, dots, hyphens and underscores, starting with a letter or digit (at most 64)."),
)
MAX_ACCELERATORS = 1_000_000
MAX_SEQUENCE_LENGTH = 10_000_000


class TrainingRun(models.Model):
    organization = models.ForeignKey(
        Organization, on_delete=models.PROTECT, related_name="+", verbose_name=_("organization")
    )
    workload = models.ForeignKey(
        Workload, on_delete=models.PROTECT, related_name="training_runs", verbose_name=_("workload")
    )
    name = models.CharField(_("run"), max_length=64, validators=[RUN_NAME])
    phase = models.CharField(_("phase"), max_length=32, choices=Workload.Phase.choices)
    planned_tokens = models.PositiveBigIntegerField(
        _("planned tokens"),
        null=True,
        blank=True,
        validators=[TOKEN_COUNT, MaxValueValidator(MAX_TOKENS, TOO_MANY_TOKENS)],
        help_text=_("Blank: the workload's target tokens."),
    )
    log_format = models.CharField(_("log format"), max_length=32, blank=True)
    sequence_length = models.PositiveIntegerField(
        _("sequence length"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_SEQUENCE_LENGTH)],
        help_text=_("Tokens per sample: tokens trained = consumed samples × sequence length."),
    )
    accelerators = models.PositiveIntegerField(
        _("accelerators"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_ACCELERATORS)],
        help_text=_("GPUs or Trainium chips the run trains on. Blank: the workload's parallelism layout."),
    )
    instance_type = models.ForeignKey(
        InstanceType,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("instance type"),
        help_text=_("Whose accelerator's peak MFU is measured against. Blank: the workload's allocation's."),
    )
    cluster = models.ForeignKey(
        Cluster, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", verbose_name=_("cluster")
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    # Running state, kept by workloads.training.ingest under this row's lock.
    last_iteration = models.BigIntegerField(_("last iteration"), null=True, blank=True)
    high_iteration = models.BigIntegerField(_("highest iteration"), null=True, blank=True)
    tokens = models.PositiveBigIntegerField(_("tokens trained"), default=0)
    first_point_at = models.DateTimeField(_("first iteration at"), null=True, blank=True)
    last_point_at = models.DateTimeField(_("last iteration at"), null=True, blank=True)
    points = models.PositiveBigIntegerField(_("iterations logged"), default=0)
    restarts = models.PositiveIntegerField(_("restarts"), default=0)
    lost_iterations = models.PositiveBigIntegerField(_("iterations computed again"), default=0)
    skipped_iterations = models.PositiveBigIntegerField(_("skipped iterations"), default=0)
    nan_iterations = models.PositiveBigIntegerField(_("nan iterations"), default=0)
    implausible_points = models.PositiveBigIntegerField(_("implausible figures"), default=0)
    last_loss = models.FloatField(_("last loss"), null=True, blank=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["workload", "created_at", "pk"]
        verbose_name = _("training run")
        verbose_name_plural = _("training runs")
        constraints = [
            models.UniqueConstraint(
                fields=["workload", "name"],
                name="training_run_name_unique_per_workload",
                violation_error_message=_("This workload already has a run with this name."),
            )
        ]

    def __str__(self) -> str:
        return f"{self.workload} / {self.name}"


class ProgressPoint(models.Model):
    # 1.5 million rows a six-month run: no index but the (run, iteration) key, which every read goes through.
    organization = models.ForeignKey(Organization, on_delete=models.PROTECT, related_name="+", db_index=False)
    run = models.ForeignKey(TrainingRun, on_delete=models.CASCADE, related_name="progress_points", db_index=False)
    iteration = models.BigIntegerField()
    at = models.DateTimeField()
    tokens = models.PositiveBigIntegerField(null=True, blank=True)
    loss = models.FloatField(null=True, blank=True)
    learning_rate = models.FloatField(null=True, blank=True)
    grad_norm = models.FloatField(null=True, blank=True)
    step_seconds = models.FloatField(null=True, blank=True)
    tflops_logged = models.FloatField(null=True, blank=True)  # per accelerator, as logged
    tokens_per_second = models.FloatField(null=True, blank=True)  # the job's, logged or from tokens and time
    skipped = models.PositiveIntegerField(default=0)
    nan = models.PositiveIntegerField(default=0)
    implausible = models.BooleanField(default=False)
    computed_again = models.BooleanField(default=False)  # an iteration the run computed again after a restart

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["run", "iteration"]
        constraints = [models.UniqueConstraint(fields=["run", "iteration"], name="one_point_per_run_iteration")]
        verbose_name = _("progress point")
        verbose_name_plural = _("progress points")

    def __str__(self) -> str:
        return f"{self.run_id}@{self.iteration}"


class RunStart(models.Model):
    """Where the run started training, or started again: its first iteration; an iteration that went back (a
    restart from a checkpoint: the iterations from `resumed_at_iteration` to `from_iteration` are computed again);
    or an iteration after a silence (a new job resuming where the last one stopped, or a hang). Goodput reads these
    to find the start-up time of each job: from the job's start to the first iteration after it."""

    class Kind(models.TextChoices):
        FIRST = "first", _("First iteration")
        RESTART = "restart", _("Restart from a checkpoint")
        RESUMED = "resumed", _("Resumed after a silence")

    organization = models.ForeignKey(Organization, on_delete=models.PROTECT, related_name="+")
    run = models.ForeignKey(TrainingRun, on_delete=models.CASCADE, related_name="starts")
    kind = models.CharField(_("kind"), max_length=16, choices=Kind.choices)
    at = models.DateTimeField(_("at"))
    from_iteration = models.BigIntegerField(_("last iteration before"), null=True, blank=True)
    resumed_at_iteration = models.BigIntegerField(_("iteration"))

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["run", "at", "pk"]
        indexes = [models.Index(fields=["run", "at"], name="run_start_at")]
        verbose_name = _("run start")
        verbose_name_plural = _("run starts")

    def __str__(self) -> str:
        return f"{self.run_id} {self.kind} at {self.resumed_at_iteration}"

    @property
    def lost_iterations(self) -> int:
        if self.kind != self.Kind.RESTART or self.from_iteration is None:
            return 0
        return self.from_iteration - self.resumed_at_iteration + 1


class ProgressHour(models.Model):
    """A run's work in one hour (UTC): what the charts, the recent rate and goodput read."""

    organization = models.ForeignKey(Organization, on_delete=models.PROTECT, related_name="+", db_index=False)
    run = models.ForeignKey(TrainingRun, on_delete=models.CASCADE, related_name="progress_hours", db_index=False)
    hour = models.DateTimeField()
    hour_number = models.PositiveIntegerField()  # hours since 1970 (UTC): a series groups hours in SQL by dividing it
    first_iteration = models.BigIntegerField()
    last_iteration = models.BigIntegerField()
    tokens_end = models.PositiveBigIntegerField(null=True, blank=True)  # the run's tokens at the hour's last point
    iterations = models.PositiveIntegerField(default=0)  # computed in the hour, again or not
    new_tokens = models.PositiveBigIntegerField(default=0)  # tokens the hour's first-time iterations trained
    timed_tokens = models.PositiveBigIntegerField(default=0)  # of those, the ones whose step time is known: throughput
    productive_seconds = models.FloatField(default=0)  # first-time iterations, less skipped and nan ones
    lost_seconds = models.FloatField(default=0)  # iterations computed again after a restart
    skipped_seconds = models.FloatField(default=0)  # skipped and nan iterations
    loss_sum = models.FloatField(default=0)
    loss_count = models.PositiveIntegerField(default=0)
    tflops_logged_sum = models.FloatField(default=0)  # plausible logged figures only
    tflops_logged_count = models.PositiveIntegerField(default=0)
    restarts = models.PositiveIntegerField(default=0)

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["run", "hour"]
        constraints = [models.UniqueConstraint(fields=["run", "hour"], name="one_progress_row_per_run_hour")]
        indexes = [models.Index(fields=["run", "hour_number"], name="progress_hour_number")]

    def __str__(self) -> str:
        return f"{self.run_id} {self.hour:%Y-%m-%d %H}h"


class LogSource(models.Model):
    """Where a run's points came from: a log file the reporter follows (its path and the job), an upload, or a
    script's posts. `next_offset` is the byte after the last one read, so a chunk sent again is skipped."""

    class Kind(models.TextChoices):
        REPORTER = "reporter", _("Cluster reporter")
        UPLOAD = "upload", _("Uploaded log")
        API = "api", _("Posted points")

    organization = models.ForeignKey(Organization, on_delete=models.PROTECT, related_name="+")
    run = models.ForeignKey(TrainingRun, on_delete=models.CASCADE, related_name="log_sources")
    kind = models.CharField(_("from"), max_length=16, choices=Kind.choices)
    name = models.CharField(_("log"), max_length=500)  # a path, a file name, or "api"
    next_offset = models.PositiveBigIntegerField(default=0)
    last_at = models.DateTimeField(null=True, blank=True)  # its last point's time: a next chunk printing none counts on
    lines = models.PositiveBigIntegerField(_("lines read"), default=0)
    other_lines = models.PositiveBigIntegerField(_("other lines skipped"), default=0)
    problems = models.PositiveBigIntegerField(_("lines refused"), default=0)
    last_problem = models.CharField(_("last line refused"), max_length=500, blank=True)
    # Where the parser stopped: the log's settings (its argument dump, a header printed once) and what the parser
    # carries to the next chunk (workloads.training.logs.base.LineParser.CARRIED).
    parser_state = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["run", "created_at", "pk"]
        constraints = [models.UniqueConstraint(fields=["run", "kind", "name"], name="one_log_source_per_run_name")]
        verbose_name = _("log source")
        verbose_name_plural = _("log sources")

    def __str__(self) -> str:
        return self.name
