"""Interconnect validation: the baselines staff keep per instance type and node count, and every nccl-tests run a
cluster posted, judged against its baseline. Written only by workloads.validation.services."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from tenants.models import InstanceType, Organization, TenantQuerySet
from workloads.clusters.models import Cluster

COLLECTIVE_HELP = _("The nccl-tests binary without _perf: all_reduce, all_gather, alltoall, reduce_scatter, ...")


class NcclBaseline(models.Model):
    """What a healthy interconnect reaches: the peak bus bandwidth of large messages of one collective on this many
    nodes of this type. A run of that collective whose peak falls under `min_fraction` of it marks the cluster
    suspect; a run of a collective without a baseline is kept unjudged."""

    instance_type = models.ForeignKey(
        InstanceType, on_delete=models.PROTECT, related_name="nccl_baselines", verbose_name=_("instance type")
    )
    collective = models.CharField(_("collective"), max_length=40, default="all_reduce", help_text=COLLECTIVE_HELP)
    nodes = models.PositiveSmallIntegerField(
        _("nodes"), validators=[MinValueValidator(1), MaxValueValidator(10_000)], help_text=_("Nodes in the run.")
    )
    size_bytes = models.PositiveBigIntegerField(_("message size (bytes)"), help_text=_("Where the peak is reached."))
    busbw_gbps = models.FloatField(
        _("bus bandwidth (GB/s)"), validators=[MinValueValidator(0.01), MaxValueValidator(100_000)]
    )
    min_fraction = models.DecimalField(
        _("suspect below"),
        max_digits=3,
        decimal_places=2,
        default=Decimal("0.90"),
        validators=[MinValueValidator(0.01), MaxValueValidator(1)],
        help_text=_("A fraction of the baseline: 0.90 marks a run reaching less than nine tenths of it."),
    )
    source = models.CharField(_("source"), max_length=300, blank=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        ordering = ["instance_type__api_name", "collective", "nodes"]
        verbose_name = _("NCCL baseline")
        verbose_name_plural = _("NCCL baselines")
        constraints = [
            models.UniqueConstraint(
                fields=["instance_type", "collective", "nodes"],
                name="one_nccl_baseline_per_type_collective_nodes",
                violation_error_message=_(
                    "There is already a baseline for this instance type, collective and node count."
                ),
            )
        ]

    def __str__(self) -> str:
        return f"{self.instance_type} {self.collective} × {self.nodes}: {self.busbw_gbps:g} GB/s"


class NcclValidation(models.Model):
    class Verdict(models.TextChoices):
        PASSED = "passed", _("Passed")
        SUSPECT = "suspect", _("Suspect")
        NO_BASELINE = "no_baseline", _("Not judged")

    organization = models.ForeignKey(
        Organization, on_delete=models.PROTECT, related_name="+", verbose_name=_("organization")
    )
    cluster = models.ForeignKey(
        Cluster, on_delete=models.CASCADE, related_name="validations", verbose_name=_("cluster")
    )
    instance_type = models.CharField(_("instance type"), max_length=40)
    # What the log ran (nccl-tests' banner or binary name); "" when neither the log nor the poster said.
    collective = models.CharField(_("collective"), max_length=40, blank=True, default="all_reduce")
    nodes = models.PositiveSmallIntegerField(_("nodes"))
    ranks = models.PositiveIntegerField(_("ranks"), null=True, blank=True)
    hosts = models.JSONField(_("hosts"), default=list, blank=True)
    # [[size in bytes, out-of-place busbw, in-place busbw], ...] in GB/s: the chart's points.
    rows = models.JSONField(_("bus bandwidth by message size"), default=list)
    peak_busbw_gbps = models.FloatField(_("peak bus bandwidth (GB/s)"))
    peak_size_bytes = models.PositiveBigIntegerField(_("peak at (bytes)"))
    avg_busbw_gbps = models.FloatField(_("average bus bandwidth (GB/s)"), null=True, blank=True)
    out_of_bounds = models.PositiveBigIntegerField(_("out-of-bounds values"), null=True, blank=True)
    wrong_values = models.PositiveBigIntegerField(_("wrong values"), default=0)
    elided = models.BooleanField(_("rows left out of the log"), default=False)
    baseline = models.ForeignKey(NcclBaseline, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    # The baseline as it was when this run was judged: a later edit of the baseline does not rewrite history.
    baseline_busbw_gbps = models.FloatField(_("baseline (GB/s)"), null=True, blank=True)
    baseline_nodes = models.PositiveSmallIntegerField(_("baseline nodes"), null=True, blank=True)
    min_fraction = models.DecimalField(_("suspect below"), max_digits=3, decimal_places=2, null=True, blank=True)
    fraction = models.FloatField(_("share of the baseline"), null=True, blank=True)
    verdict = models.CharField(_("verdict"), max_length=16, choices=Verdict.choices)
    reasons = models.JSONField(_("reasons"), default=list, blank=True)
    log = models.TextField(_("log"), blank=True)
    # SHA-256 of the log as posted: the same log posted again (a reporter's retry) is the same run, kept once.
    log_digest = models.CharField(max_length=64, editable=False)
    submitted_at = models.DateTimeField(_("submitted"), auto_now_add=True, db_index=True)
    submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    case = models.ForeignKey(
        "workloads.SupportCase", on_delete=models.SET_NULL, null=True, blank=True, related_name="validations"
    )

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["-submitted_at", "-pk"]
        verbose_name = _("NCCL validation")
        verbose_name_plural = _("NCCL validations")
        indexes = [models.Index(fields=["cluster", "-submitted_at"], name="validation_cluster_time")]
        constraints = [models.UniqueConstraint(fields=["cluster", "log_digest"], name="one_run_per_log")]

    def __str__(self) -> str:
        return f"{self.cluster} {self.submitted_at:%Y-%m-%d %H:%M} {self.verdict}"

    @property
    def share(self) -> str:
        """The peak as a share of the baseline, said the same on the run's card and in the history: 99.8%."""
        return "" if self.fraction is None else f"{self.fraction:.1%}"
