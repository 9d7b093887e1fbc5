"""Node health: faults per node (and, with GPU telemetry, per GPU), open while the condition holds."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from tenants.models import Organization, TenantQuerySet
from workloads.clusters.models import Cluster, ClusterNode


class HealthEvent(models.Model):
    """A node-level fault: from the cloud's node status now; GPU XID, ECC, thermal, EFA reports later."""

    class Kind(models.TextChoices):
        NODE_FAILURE = "node_failure", _("Node failure")
        NODE_NOT_FOUND = "node_not_found", _("Node not found")
        NODE_REPLACED = "node_replaced", _("Node replaced")
        GPU_XID = "gpu_xid", _("GPU XID error")
        ECC = "ecc", _("ECC / row-remap failure")
        THERMAL = "thermal", _("Thermal violation")
        MISSING_GPU = "missing_gpu", _("Missing GPU")
        EFA = "efa", _("EFA error")

    class Severity(models.TextChoices):
        INFO = "info", _("Info")
        WARNING = "warning", _("Warning")
        CRITICAL = "critical", _("Critical")

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
    kind = models.CharField(_("kind"), max_length=32, choices=Kind.choices)
    severity = models.CharField(_("severity"), max_length=16, choices=Severity.choices)
    message = models.TextField(_("message"), blank=True)
    observed_at = models.DateTimeField(_("observed at"))
    resolved_at = models.DateTimeField(_("resolved at"), null=True, blank=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["-observed_at", "-pk"]
        verbose_name = _("health event")
        verbose_name_plural = _("health events")
        constraints = [
            # A repeated poll of the same failed node updates the open event, never adds a second.
            models.UniqueConstraint(
                fields=["cluster", "instance_id", "kind"],
                condition=Q(resolved_at__isnull=True),
                name="one_open_health_event_per_node_and_kind",
            )
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.instance_id}"
