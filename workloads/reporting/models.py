"""Per-cluster reporter tokens: what the head-node script authenticates with.

A token names one cluster and can write only that cluster's ingest endpoints (jobs, GPU health, nccl-tests);
anywhere else it is no credential at all. Stored as a digest and a prefix (tenants.tokens.keys), shown once.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from tenants.models import Organization, TenantQuerySet
from tenants.tokens.keys import HashedKey
from workloads.clusters.models import Cluster


class ReporterTokenQuerySet(TenantQuerySet):
    def active(self) -> ReporterTokenQuerySet:
        return self.filter(revoked_at__isnull=True, expires_at__gt=timezone.now())


class ReporterToken(HashedKey):
    KIND = "fmc"

    organization = models.ForeignKey(
        Organization, on_delete=models.PROTECT, related_name="+", verbose_name=_("organization")
    )
    cluster = models.ForeignKey(
        Cluster, on_delete=models.CASCADE, related_name="reporter_tokens", verbose_name=_("cluster")
    )
    name = models.CharField(_("name"), max_length=100)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    objects = ReporterTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("reporter token")
        verbose_name_plural = _("reporter tokens")

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"
