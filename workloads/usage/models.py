"""Usage accounting: the raw runs of each node, the daily rollups built from them and from the allocations, the
rate card that prices them, and the cost AWS actually billed.

Time is stored as integer instance-microseconds and money as integer micro-USD, so that a week, a month or the
program to date — always sums of daily rows — add up exactly on SQLite and PostgreSQL alike (decimals there
would be floats). Pages show hours and dollars.
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from tenants.models import Region, TenantQuerySet


class NodeInterval(models.Model):
    """A node's run from launch to termination (open while it runs): the raw input of usage accounting.

    An accounting record: deleting its cluster or node keeps it (the foreign keys go null; what it needs to be
    counted — organization, instance type, region, times — is on the row). An open interval counts up to
    `last_seen_at`, the last poll that saw the node, never to "now": a stopped poller must not invent usage.
    """

    organization = models.ForeignKey(
        "tenants.Organization", on_delete=models.PROTECT, related_name="+", verbose_name=_("organization")
    )
    cluster = models.ForeignKey(
        "workloads.Cluster",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="node_intervals",
        verbose_name=_("cluster"),
    )
    node = models.ForeignKey(
        "workloads.ClusterNode", on_delete=models.SET_NULL, null=True, blank=True, related_name="intervals"
    )
    instance_id = models.CharField(_("instance id"), max_length=64)
    instance_type = models.CharField(_("instance type"), max_length=40)
    region = models.CharField(_("region"), max_length=32, choices=Region.choices)
    started_at = models.DateTimeField(_("started at"))
    ended_at = models.DateTimeField(_("ended at"), null=True, blank=True)
    last_seen_at = models.DateTimeField(_("last seen running at"))

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["started_at", "pk"]
        verbose_name = _("node interval")
        verbose_name_plural = _("node intervals")
        constraints = [
            # Repeated polls of a running node keep extending the one open interval, never add one.
            models.UniqueConstraint(
                fields=["node"], condition=Q(ended_at__isnull=True), name="one_open_interval_per_node"
            ),
            models.UniqueConstraint(fields=["node", "started_at"], name="one_interval_per_node_launch"),
        ]
        indexes = [
            models.Index(fields=["organization", "started_at"], name="interval_org_start"),
            models.Index(fields=["organization", "ended_at"], name="interval_org_end"),  # rollups: recent runs
        ]

    def __str__(self) -> str:
        return f"{self.instance_id} {self.started_at} – {self.ended_at or '…'}"

    @property
    def counted_until(self):
        """Where the run ends for accounting: its end, or the last poll that saw it while it is open."""
        return self.ended_at or self.last_seen_at


class UsageDay(models.Model):
    """One organization's use of one pool on one program day (Asia/Tokyo): the rollup every usage figure is
    summed from. Written only by workloads.usage.rollups; re-priced by workloads.usage.rates."""

    organization = models.ForeignKey(
        "tenants.Organization", on_delete=models.PROTECT, related_name="usage_days", verbose_name=_("organization")
    )
    pool = models.ForeignKey(
        "tenants.CapacityPool", on_delete=models.PROTECT, related_name="usage_days", verbose_name=_("pool")
    )
    day = models.DateField(_("day"))
    allocated_microseconds = models.BigIntegerField(_("allocated instance-microseconds"), default=0)
    running_microseconds = models.BigIntegerField(_("running instance-microseconds"), default=0)
    # Scheduler jobs' accelerator time on the org's nodes (workloads.jobs.busy), never more than the nodes ran;
    # None while none of the organization's clusters has reported a job.
    busy_accelerator_microseconds = models.BigIntegerField(_("busy accelerator-microseconds"), null=True, blank=True)
    usd_per_hour = models.DecimalField(_("USD per instance-hour"), max_digits=10, decimal_places=4, default=0)
    rate_source = models.CharField(_("rate from"), max_length=32, blank=True)
    allocated_cost_micro_usd = models.BigIntegerField(_("allocated cost (micro-USD)"), default=0)
    running_cost_micro_usd = models.BigIntegerField(_("running cost (micro-USD)"), default=0)
    computed_at = models.DateTimeField(_("computed at"))

    objects = TenantQuerySet.as_manager()

    class Meta:
        # By ids, not by the organization's name: a join an ordering adds stays in every grouped read of the rows
        ordering = ["day", "organization_id", "pool_id"]
        verbose_name = _("usage day")
        verbose_name_plural = _("usage days")
        constraints = [models.UniqueConstraint(fields=["organization", "pool", "day"], name="one_usage_row_per_day")]
        indexes = [
            models.Index(fields=["day", "organization"], name="usage_day_org"),
            # One organization's days, whatever its pools: the billed check's computed side, per organization
            models.Index(fields=["organization", "day"], name="usage_org_day"),
        ]

    def __str__(self) -> str:
        return f"{self.organization_id} {self.pool_id} {self.day}"


class SummedUsage(models.Model):
    """The daily rows' figures summed (the usage definitions' ROW_SUMS, idle and over-allocation floored per daily
    row before the sum), kept beside them by workloads.usage.summaries so a program page sums a few thousand rows
    whatever the number of organizations and days. Field names are the sums' names."""

    allocated = models.BigIntegerField(default=0)  # instance-microseconds
    running = models.BigIntegerField(default=0)
    busy = models.BigIntegerField(null=True, blank=True)  # accelerator-microseconds; None: no job reported
    allocated_accelerators = models.BigIntegerField(default=0)  # accelerator-microseconds
    running_accelerators = models.BigIntegerField(default=0)
    allocated_cost = models.BigIntegerField(default=0)  # micro-USD
    running_cost = models.BigIntegerField(default=0)
    idle = models.BigIntegerField(default=0)
    idle_cost = models.BigIntegerField(default=0)
    over_allocation = models.BigIntegerField(default=0)
    over_allocation_cost = models.BigIntegerField(default=0)

    class Meta:
        abstract = True


class UsageWeek(SummedUsage):
    """One organization's daily rows of one ISO week (`week`: its Monday), summed over its pools: the program's
    ranking, its landing page and the heatmap read these."""

    organization = models.ForeignKey("tenants.Organization", on_delete=models.PROTECT, related_name="usage_weeks")
    week = models.DateField()
    # The billed check of the week (workloads.usage.billed) as of `settled_through`, the week's last day Cost
    # Explorer had settled when this was written: what it billed (None: nothing), the running cost computed up
    # to that day. A reader whose settled day differs reads BilledCost and UsageDay instead.
    billed = models.BigIntegerField(null=True, blank=True)
    billed_computed = models.BigIntegerField(default=0)
    settled_through = models.DateField(null=True, blank=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organization", "week"], name="one_usage_week_per_org")]
        indexes = [models.Index(fields=["week", "organization"], name="usage_week_org")]

    def __str__(self) -> str:
        return f"{self.organization_id} {self.week}"


class SettledWeek(models.Model):
    """The settled day (billed.billed_settled_through) every organization's UsageWeek of the week was summed with,
    written when they all are (a billing fetch, a rebuild): a reader finding another settled day reads the daily
    rows instead."""

    week = models.DateField(unique=True)
    through = models.DateField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.week}: {self.through}"


class PoolUsageDay(SummedUsage):
    """Every organization's daily rows of one pool on one day, summed: the program's totals and pool lines. Program
    staff only (it crosses organizations)."""

    pool = models.ForeignKey("tenants.CapacityPool", on_delete=models.PROTECT, related_name="+")
    day = models.DateField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["pool", "day"], name="one_pool_usage_row_per_day")]
        indexes = [models.Index(fields=["day"], name="pool_usage_day")]

    def __str__(self) -> str:
        return f"{self.pool_id} {self.day}"


class RecentPoolUse(models.Model):
    """One organization's daily rows of one pool over the 7 days ending `through` (the day it was last summed, with
    the organization's rows of that day): what the landing page picks the allocations to project from, the ones
    running least of what they hold, without reading every organization's week of daily rows."""

    organization = models.ForeignKey("tenants.Organization", on_delete=models.PROTECT, related_name="+")
    pool = models.ForeignKey("tenants.CapacityPool", on_delete=models.PROTECT, related_name="+")
    through = models.DateField()
    allocated = models.BigIntegerField(default=0)  # instance-microseconds
    running = models.BigIntegerField(default=0)

    objects = TenantQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organization", "pool"], name="one_recent_use_per_pool")]

    def __str__(self) -> str:
        return f"{self.organization_id} {self.pool_id} through {self.through}"


class ClusterUsageDay(models.Model):
    """Running instance-time of one cluster in one pool on one day: the per-cluster breakdown of UsageDay."""

    organization = models.ForeignKey(
        "tenants.Organization", on_delete=models.PROTECT, related_name="+", verbose_name=_("organization")
    )
    cluster = models.ForeignKey(
        "workloads.Cluster", on_delete=models.SET_NULL, null=True, blank=True, related_name="usage_days"
    )
    cluster_name = models.CharField(_("cluster"), max_length=40, blank=True)
    pool = models.ForeignKey("tenants.CapacityPool", on_delete=models.PROTECT, related_name="+")
    day = models.DateField(_("day"))
    running_microseconds = models.BigIntegerField(_("running instance-microseconds"), default=0)
    busy_accelerator_microseconds = models.BigIntegerField(_("busy accelerator-microseconds"), null=True, blank=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["day", "cluster_name"]
        verbose_name = _("cluster usage day")
        verbose_name_plural = _("cluster usage days")
        indexes = [models.Index(fields=["organization", "day"], name="cluster_usage_org_day")]

    def __str__(self) -> str:
        return f"{self.cluster_name} {self.day}"


class UsageDirtyDay(models.Model):
    """A day of an organization whose rollup is out of date: written beside every change that moves a figure
    (a poll that saw nodes, an interval closed, an allocation granted or revoked), consumed by the rollup."""

    organization = models.ForeignKey("tenants.Organization", on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    marked_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organization", "day"], name="one_dirty_mark_per_day")]

    def __str__(self) -> str:
        return f"{self.organization_id} {self.day}"


class UsageRevision(models.Model):
    """One row counting the rollups that changed something: the cached program charts are keyed on it, so they
    are rendered again after a rollup and read from the cache until the next one."""

    number = models.BigIntegerField(default=0)
    changed_at = models.DateTimeField(null=True)

    def __str__(self) -> str:
        return f"usage revision {self.number}"

    @classmethod
    def bump(cls, now) -> None:
        if not cls.objects.filter(pk=1).update(number=models.F("number") + 1, changed_at=now):
            cls.objects.get_or_create(pk=1, defaults={"number": 1, "changed_at": now})

    @classmethod
    def current(cls) -> int:
        return cls.objects.filter(pk=1).values_list("number", flat=True).first() or 0


class RateCardEntry(models.Model):
    """What the program pays per instance-hour of a type in a region, from a day on (until the next entry of
    the same type, region and kind). Where kinds overlap, negotiated beats reserved beats the list price; with
    no entry at all, the catalog's dated on-demand price applies."""

    class Kind(models.TextChoices):
        NEGOTIATED = "negotiated", _("Negotiated rate")
        RESERVED = "reserved", _("Capacity block / reservation")
        ON_DEMAND = "on_demand", _("On-demand list price")

    instance_type = models.ForeignKey(
        "tenants.InstanceType", on_delete=models.PROTECT, related_name="rate_card", verbose_name=_("instance type")
    )
    region = models.CharField(_("region"), max_length=32, choices=Region.choices)
    kind = models.CharField(_("kind"), max_length=16, choices=Kind.choices)
    usd_per_hour = models.DecimalField(
        _("USD per instance-hour"),
        max_digits=10,
        decimal_places=4,
        validators=[MinValueValidator(Decimal("0.0001"))],
    )
    effective_from = models.DateField(_("effective from"))
    note = models.CharField(_("note"), max_length=300, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        ordering = ["instance_type__api_name", "region", "kind", "effective_from"]
        verbose_name = _("rate card entry")
        verbose_name_plural = _("rate card")
        constraints = [
            models.UniqueConstraint(
                fields=["instance_type", "region", "kind", "effective_from"],
                name="one_rate_per_kind_and_day",
                violation_error_message=_(
                    "There is already a rate of this kind for this type and region from that day."
                ),
            )
        ]

    def __str__(self) -> str:
        return f"{self.instance_type} {self.region} {self.kind} from {self.effective_from}: {self.usd_per_hour}"


class BilledCost(models.Model):
    """What AWS billed an organization's linked account for one instance type on one day (Cost Explorer)."""

    organization = models.ForeignKey(
        "tenants.Organization", on_delete=models.PROTECT, related_name="+", verbose_name=_("organization")
    )
    day = models.DateField(_("day"))
    instance_type = models.CharField(_("instance type"), max_length=40)
    cost_micro_usd = models.BigIntegerField(_("billed cost (micro-USD)"))
    fetched_at = models.DateTimeField(_("fetched at"))

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["day", "organization_id", "instance_type"]  # by id: no join in grouped reads (as UsageDay)
        verbose_name = _("billed cost")
        verbose_name_plural = _("billed costs")
        constraints = [
            models.UniqueConstraint(fields=["organization", "day", "instance_type"], name="one_billed_row_per_day")
        ]
        # A week's billed cost across every organization (the landing page, the program table) reads a range of
        # days: without it, every such read scanned a year of rows per organization.
        indexes = [models.Index(fields=["day", "organization"], name="billed_day_org")]

    def __str__(self) -> str:
        return f"{self.organization_id} {self.day} {self.instance_type}"


class DigestSent(models.Model):
    """The weekly digest of one ISO week went out: claimed before sending, so it goes once however often the
    task runs."""

    week_start = models.DateField(unique=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    recipients = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return str(self.week_start)


class AcceleratorBusyHour(models.Model):
    """Accelerator-time a node's own telemetry saw busy in one program hour (Trainium: the Neuron monitor's NeuronCore
    utilization × the node's devices × the time since its previous reading): busy hours where the scheduler says
    nothing (workloads.usage.utilization). An accounting record, kept like the node's run intervals."""

    organization = models.ForeignKey(
        "tenants.Organization", on_delete=models.PROTECT, related_name="+", verbose_name=_("organization")
    )
    cluster = models.ForeignKey("workloads.Cluster", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    node = models.ForeignKey(
        "workloads.ClusterNode", on_delete=models.SET_NULL, null=True, blank=True, related_name="busy_hours"
    )
    hour = models.DateTimeField(_("hour"))  # the start of a program-time-zone hour
    busy_accelerator_microseconds = models.BigIntegerField(_("busy accelerator-microseconds"), default=0)
    read_microseconds = models.BigIntegerField(_("microseconds covered by readings"), default=0)

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["hour"]
        verbose_name = _("accelerator busy hour")
        verbose_name_plural = _("accelerator busy hours")
        constraints = [models.UniqueConstraint(fields=["node", "hour"], name="one_busy_hour_per_node")]
        indexes = [models.Index(fields=["organization", "hour"], name="busy_hour_org")]

    def __str__(self) -> str:
        return f"{self.node_id} {self.hour:%Y-%m-%d %H:00}"
