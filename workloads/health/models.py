"""Node health: faults per node and GPU, open while the condition holds, and where GPU telemetry is read."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from tenants.models import Organization, TenantQuerySet
from workloads.clusters.models import Cluster, ClusterNode


class HealthEvent(models.Model):
    """A node-level fault (the cloud's node status) or an accelerator's (DCGM exporter or Neuron monitor readings),
    open while the condition holds and resolved when it clears. Written only by workloads.health.services /
    telemetry."""

    class Kind(models.TextChoices):
        NODE_FAILURE = "node_failure", _("Node failure")
        NODE_NOT_FOUND = "node_not_found", _("Node not found")
        NODE_REPLACED = "node_replaced", _("Node replaced")
        # The DCGM exporter of a GPU node or the Neuron monitor of a Trainium one (the message says which)
        EXPORTER_SILENT = "exporter_silent", _("Accelerator exporter not reporting")
        # One per rule of workloads.health.dcgm (XID_RULES, METRIC_RULES).
        GPU_XID = "gpu_xid", _("GPU XID error")
        ECC_DBE_VOLATILE = "ecc_dbe_volatile", _("Double-bit ECC errors")
        ECC_DBE_AGGREGATE = "ecc_dbe_aggregate", _("Double-bit ECC errors (lifetime)")
        REMAPPED_ROWS = "remapped_rows_uncorrectable", _("Rows remapped after uncorrectable errors")
        ROW_REMAP_FAILURE = "row_remap_failure", _("Row remap failure")
        ROW_REMAP_PENDING = "row_remap_pending", _("Row remap pending")
        THERMAL = "thermal_violation", _("Thermal violation")
        POWER = "power_violation", _("Power capping")
        MISSING_GPU = "gpu_missing", _("Missing GPU")
        # One per rule of workloads.health.neuron (Trainium, from the Neuron monitor).
        NEURON_ECC_UNCORRECTED = "neuron_ecc_uncorrected", _("Uncorrected Neuron ECC errors")
        NEURON_ECC_CORRECTED = "neuron_ecc_corrected", _("Corrected Neuron ECC errors")
        NEURON_DEVICE_MISSING = "neuron_device_missing", _("Missing Neuron device")
        NEURON_CORES_MISSING = "neuron_cores_missing", _("Missing NeuronCores")
        NEURON_HARDWARE_ERRORS = "neuron_hardware_errors", _("Neuron hardware execution errors")
        EFA = "efa", _("EFA error")

    class Severity(models.TextChoices):
        INFO = "info", _("Info")
        WARNING = "warning", _("Warning")
        CRITICAL = "critical", _("Critical")

    class Source(models.TextChoices):
        CLOUD = "cloud", _("AWS node status")
        PROMETHEUS = "prometheus", _("Prometheus")
        PUSH = "push", _("Exporter text posted by the cluster")

    organization = models.ForeignKey(
        Organization, on_delete=models.PROTECT, related_name="health_events", verbose_name=_("organization")
    )
    cluster = models.ForeignKey(
        Cluster, on_delete=models.CASCADE, related_name="health_events", verbose_name=_("cluster")
    )
    node = models.ForeignKey(
        ClusterNode, on_delete=models.SET_NULL, null=True, blank=True, related_name="health_events"
    )
    instance_id = models.CharField(_("instance id"), max_length=64)
    group_name = models.CharField(_("group"), max_length=63, blank=True)
    gpu = models.PositiveSmallIntegerField(_("GPU"), null=True, blank=True)  # None: the node as a whole
    kind = models.CharField(_("kind"), max_length=32, choices=Kind.choices)
    code = models.PositiveIntegerField(_("code"), null=True, blank=True)  # the Xid
    severity = models.CharField(_("severity"), max_length=16, choices=Severity.choices)
    action = models.CharField(_("recommended action"), max_length=32, blank=True)
    source = models.CharField(_("source"), max_length=16, choices=Source.choices, default=Source.CLOUD)
    message = models.TextField(_("message"), blank=True)
    observed_at = models.DateTimeField(_("observed at"))
    resolved_at = models.DateTimeField(_("resolved at"), null=True, blank=True)
    # The support case a critical event opened or was added to (workloads.health.incidents).
    case = models.ForeignKey(
        "workloads.SupportCase",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="health_events",
        verbose_name=_("support case"),
    )

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["-observed_at", "-pk"]
        verbose_name = _("health event")
        verbose_name_plural = _("health events")
        constraints = [
            # A repeated poll of the same failed node (or GPU) updates the open event, never adds a second.
            models.UniqueConstraint(
                fields=["cluster", "instance_id", "kind"],
                condition=Q(resolved_at__isnull=True, gpu__isnull=True),
                name="one_open_health_event_per_node_and_kind",
            ),
            models.UniqueConstraint(
                fields=["cluster", "instance_id", "gpu", "kind"],
                condition=Q(resolved_at__isnull=True, gpu__isnull=False),
                name="one_open_health_event_per_gpu_and_kind",
            ),
        ]
        indexes = [
            models.Index(fields=["resolved_at", "severity"], name="health_open_severity"),
            # The landing page's open incidents, oldest first
            models.Index(fields=["observed_at", "id"], condition=Q(resolved_at=None), name="health_open_observed"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.instance_id}"

    @property
    def is_open(self) -> bool:
        return self.resolved_at is None


class PrometheusSource(models.Model):
    """Where the portal reads GPU telemetry (DCGM exporter series): an Amazon Managed Service for Prometheus
    workspace or a self-managed Prometheus, for one organization's clusters or for the whole program's.
    Set up by the program team (Django admin); polled on beat's schedule (workloads.health.tasks)."""

    organization = models.ForeignKey(
        Organization,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("organization"),
        help_text=_("Empty: the program's own workspace, holding every organization's clusters."),
    )
    name = models.CharField(_("name"), max_length=100)
    url = models.URLField(
        _("query URL"),
        max_length=500,
        help_text=_(
            "The base of /api/v1/query: https://aps-workspaces.<region>.amazonaws.com/workspaces/<id> for Amazon "
            "Managed Service for Prometheus, or http://prometheus.example:9090."
        ),
    )
    sigv4_region = models.CharField(
        _("SigV4 region"),
        max_length=32,
        blank=True,
        help_text=_(
            "Amazon Managed Service for Prometheus: the workspace's region (requests are signed). Empty for a "
            "Prometheus that takes unsigned requests."
        ),
    )
    cluster_label = models.CharField(
        _("cluster label"),
        max_length=64,
        default="cluster",
        help_text=_(
            "The series label naming a cluster (its name in AWS or in the portal): tells apart hosts with the "
            "same private address in two organizations' networks."
        ),
    )
    enabled = models.BooleanField(_("enabled"), default=True)
    last_polled_at = models.DateTimeField(_("last polled"), null=True, blank=True)
    last_error = models.CharField(_("last error"), max_length=500, blank=True)
    last_series = models.PositiveIntegerField(_("series read"), default=0)
    unmatched_hosts = models.JSONField(_("hosts not matched to a node"), default=list, blank=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        verbose_name = _("Prometheus source")
        verbose_name_plural = _("Prometheus sources")

    def __str__(self) -> str:
        return self.name
