"""The pool ledger's rows (app label tenants; tenants/models.py lists them). Written only by
tenants.capacity.ledger."""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from tenants.audit_labels import Numbered


class PoolDay(models.Model):
    """Instances allocated in a pool on one day: the sum of the allocations holding capacity that day.
    Kept in the same transaction as every allocation change, so headroom reads days, not allocations."""

    pool = models.ForeignKey("tenants.CapacityPool", on_delete=models.CASCADE, related_name="+")
    day = models.DateField(_("day"))
    allocated = models.IntegerField(_("instances allocated"), default=0)

    class Meta:
        app_label = "tenants"
        verbose_name = _("pool day")
        verbose_name_plural = _("pool days")
        constraints = [models.UniqueConstraint(fields=["pool", "day"], name="one_ledger_row_per_pool_day")]

    def __str__(self) -> str:
        return f"{self.pool_id} {self.day}: {self.allocated}"


class CapacityPlan(Numbered, models.Model):
    """A stored plan for the pending queue (tenants.capacity.planning): what it was asked (`inputs`), what it
    answers (`result`), and the state it was made on — a fingerprint per request and each pool's capacity — so
    applying it can refuse what changed since. Nothing here touches the ledger; applying goes through the
    approval service one request at a time and records each outcome in `outcomes`."""

    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="+",
        verbose_name=_("created by"),
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    inputs = models.JSONField(_("inputs"), default=dict)
    result = models.JSONField(_("result"), default=dict)
    fingerprints = models.JSONField(_("request fingerprints"), default=dict)
    pool_capacity = models.JSONField(_("pool capacity"), default=dict)
    outcomes = models.JSONField(_("outcomes of applying"), default=dict)

    class Meta:
        app_label = "tenants"
        ordering = ["-created_at", "-pk"]
        verbose_name = _("capacity plan")
        verbose_name_plural = _("capacity plans")
        indexes = [models.Index(fields=["created_at", "id"], name="plan_created")]

    def __str__(self) -> str:
        return self.number

    @property
    def is_what_if(self) -> bool:
        return bool(self.inputs.get("what_if"))
