"""Workload records: each organization's training runs, and the field-by-field history of every change.

Writes go through workloads.records.services, which keeps one WorkloadChange per changed field.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Q
from django.utils.formats import number_format
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from tenants.capacity.estimate import MAX_PARAMETERS, MAX_TOKENS, PARAMETER_COUNT, TOKEN_COUNT
from tenants.models import FREE_TEXT_MAX, Allocation, Framework, Organization, TenantQuerySet

MAX_PARALLEL_DEGREE = 65_536  # per dimension; a 100,000-GPU run is about 2^17 accelerators in all
TOO_MANY_PARAMETERS = _("At most 100 trillion parameters.")
TOO_MANY_TOKENS = _("At most 10 quadrillion tokens.")
PARAMETERS = [PARAMETER_COUNT, MaxValueValidator(MAX_PARAMETERS, TOO_MANY_PARAMETERS)]
DEGREE = [MinValueValidator(1), MaxValueValidator(MAX_PARALLEL_DEGREE)]


class Workload(models.Model):
    """A tenant's training record: what it trains, with which framework, on what cluster and storage.

    Every change goes through workloads.records.services, which keeps one WorkloadChange per changed field.
    """

    class Phase(models.TextChoices):
        PRETRAINING = "pretraining", _("Pre-training")
        CONTINUED_PRETRAINING = "continued_pretraining", _("Continued pre-training")
        SFT = "sft", _("Supervised fine-tuning (SFT)")
        RL = "rl", _("RL / post-training")
        EVALUATION = "evaluation", _("Evaluation")
        INFERENCE = "inference", _("Inference")

    class Architecture(models.TextChoices):
        DENSE = "dense", _("Dense")
        MOE = "moe", _("Mixture of experts (MoE)")

    Framework = Framework  # one list for the program: the capacity request's framework is the workload's

    class ClusterType(models.TextChoices):
        PARALLELCLUSTER_SLURM = "parallelcluster_slurm", _("ParallelCluster / Slurm")
        HYPERPOD_SLURM = "hyperpod_slurm", _("HyperPod / Slurm")
        HYPERPOD_EKS = "hyperpod_eks", _("HyperPod / EKS")
        EKS = "eks", _("EKS")

    class Storage(models.TextChoices):
        FSX_LUSTRE_S3 = "fsx_lustre_s3", _("FSx for Lustre with S3 data repository association")
        FSX_OPENZFS = "fsx_openzfs", _("FSx for OpenZFS")
        S3_ONLY = "s3_only", _("S3 only")
        INSTANCE_NVME = "instance_nvme", _("Instance NVMe for checkpoints")

    class Status(models.TextChoices):
        PLANNED = "planned", pgettext_lazy("workload status", "Planned")
        RUNNING = "running", pgettext_lazy("workload status", "Running")
        PAUSED = "paused", pgettext_lazy("workload status", "Paused")
        COMPLETED = "completed", pgettext_lazy("workload status", "Completed")
        ABANDONED = "abandoned", pgettext_lazy("workload status", "Abandoned")

    organization = models.ForeignKey(
        Organization, on_delete=models.PROTECT, related_name="workloads", verbose_name=_("organization")
    )
    name = models.CharField(_("name"), max_length=200)
    phase = models.CharField(_("phase"), max_length=32, choices=Phase.choices)
    model_name = models.CharField(_("model name"), max_length=200, blank=True)
    architecture = models.CharField(
        _("architecture"), max_length=16, choices=Architecture.choices, default=Architecture.DENSE
    )
    parameter_count = models.PositiveBigIntegerField(_("parameters"), validators=PARAMETERS)
    active_parameter_count = models.PositiveBigIntegerField(
        _("active parameters"),
        null=True,
        blank=True,
        validators=PARAMETERS,
        help_text=_("Mixture-of-experts models only: parameters used per token."),
    )
    target_tokens = models.PositiveBigIntegerField(
        _("target tokens"),
        null=True,
        blank=True,
        validators=[TOKEN_COUNT, MaxValueValidator(MAX_TOKENS, TOO_MANY_TOKENS)],
    )
    framework = models.CharField(_("framework"), max_length=32, choices=Framework.choices)
    tensor_parallel = models.PositiveIntegerField(_("tensor parallel degree"), default=1, validators=DEGREE)
    pipeline_parallel = models.PositiveIntegerField(_("pipeline parallel degree"), default=1, validators=DEGREE)
    data_parallel = models.PositiveIntegerField(_("data parallel degree"), default=1, validators=DEGREE)
    expert_parallel = models.PositiveIntegerField(_("expert parallel degree"), default=1, validators=DEGREE)
    cluster_type = models.CharField(_("cluster type"), max_length=32, choices=ClusterType.choices)
    storage = models.CharField(_("storage"), max_length=32, choices=Storage.choices)
    allocation = models.ForeignKey(
        Allocation,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="workloads",
        verbose_name=_("allocation"),
    )
    status = models.CharField(_("status"), max_length=16, choices=Status.choices, default=Status.PLANNED)
    notes = models.TextField(_("notes"), blank=True, max_length=FREE_TEXT_MAX)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+", verbose_name=_("created by")
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["organization__name", "name", "pk"]
        verbose_name = _("workload")
        verbose_name_plural = _("workloads")
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "name"],
                name="workload_name_unique_per_org",
                violation_error_message=_("Your organization already has a workload with this name."),
            ),
            models.CheckConstraint(
                condition=Q(active_parameter_count__isnull=True) | Q(active_parameter_count__lte=F("parameter_count")),
                name="workload_active_params_within_total",
                violation_error_message=_("Active parameters cannot exceed the parameter count."),
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        errors = {}
        active, total = self.active_parameter_count, self.parameter_count
        if self.architecture == self.Architecture.MOE and active is None:
            errors["active_parameter_count"] = _("A mixture-of-experts model needs its active parameter count.")
        elif self.architecture == self.Architecture.DENSE and active is not None:
            errors["active_parameter_count"] = _("A dense model uses every parameter: leave active parameters empty.")
        elif active is not None and total is not None and active > total:
            errors["active_parameter_count"] = _("Active parameters cannot exceed the parameter count.")
        if self.architecture == self.Architecture.DENSE and self.expert_parallel not in (None, 1):
            errors["expert_parallel"] = _("Expert parallelism applies to mixture-of-experts models only.")
        # The form and serializer offer only the org's own allocations; this guards every other path.
        if self.allocation_id and self.organization_id and self.allocation.organization_id != self.organization_id:
            errors["allocation"] = _("This allocation belongs to another organization.")
        if errors:
            raise ValidationError(errors)

    @property
    def storage_short(self) -> str:
        """The storage choice in a few words, for tables."""
        return str(STORAGE_SHORT.get(self.storage, self.get_storage_display()))

    @property
    def world_size(self) -> int:
        """Ranks the parallelism layout needs (expert parallelism shards within data parallelism): GPUs, or
        NeuronCores on Trainium."""
        return self.tensor_parallel * self.pipeline_parallel * self.data_parallel

    @property
    def outgrows_allocation(self) -> bool:
        """The layout needs more accelerators than the linked allocation holds (workloads.records.fit says more)."""
        return self.allocation is not None and self.world_size > self.allocation.ranks


STORAGE_SHORT = {
    Workload.Storage.FSX_LUSTRE_S3: _("FSx Lustre + S3"),
    Workload.Storage.FSX_OPENZFS: _("FSx OpenZFS"),
    Workload.Storage.S3_ONLY: _("S3 only"),
    Workload.Storage.INSTANCE_NVME: _("Instance NVMe"),
}


class WorkloadChange(models.Model):
    """One field of one workload changed by one person, or the workload's creation. Append-only."""

    class Kind(models.TextChoices):
        CREATED = "created", pgettext_lazy("history", "Created")
        CHANGED = "changed", pgettext_lazy("history", "Changed")

    organization = models.ForeignKey(
        Organization, on_delete=models.PROTECT, related_name="+", verbose_name=_("organization")
    )
    workload = models.ForeignKey(Workload, on_delete=models.PROTECT, related_name="changes", verbose_name=_("workload"))
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("changed by"),
    )
    kind = models.CharField(_("kind"), max_length=16, choices=Kind.choices, default=Kind.CHANGED)
    field = models.CharField(_("field"), max_length=64, blank=True)
    # Choice fields keep their key (shown with today's label), foreign keys their text at the time.
    old_value = models.TextField(_("from"), blank=True)
    new_value = models.TextField(_("to"), blank=True)
    changed_at = models.DateTimeField(_("changed at"), auto_now_add=True, db_index=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["-changed_at", "-pk"]
        verbose_name = _("workload change")
        verbose_name_plural = _("workload changes")

    def __str__(self) -> str:
        return f"{self.workload_id} {self.field}: {self.old_value} → {self.new_value}"

    def save(self, *args, **kwargs) -> None:
        if self.pk is not None:
            raise ValueError("Workload history is append-only.")
        super().save(*args, **kwargs)

    @property
    def field_label(self) -> str:
        return Workload._meta.get_field(self.field).verbose_name if self.field else ""

    def _display(self, value: str) -> str:
        if not self.field or value == "":
            return value
        field = Workload._meta.get_field(self.field)
        if isinstance(field, models.IntegerField) and value.isdigit():
            return number_format(int(value), force_grouping=True)  # 70,000,000,000 parameters, not 70000000000
        return str(dict(field.flatchoices).get(value, value))

    @property
    def old_display(self) -> str:
        return self._display(self.old_value)

    @property
    def new_display(self) -> str:
        return self._display(self.new_value)
