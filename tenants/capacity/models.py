"""The pool ledger's rows (app label tenants; tenants/models.py lists them). Written only by
tenants.capacity.ledger."""

from django.db import models
from django.utils.translation import gettext_lazy as _


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
