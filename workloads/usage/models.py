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
        ordering = ["day", "organization", "pool"]
        verbose_name = _("usage day")
        verbose_name_plural = _("usage days")
        constraints = [models.UniqueConstraint(fields=["organization", "pool", "day"], name="one_usage_row_per_day")]
        indexes = [models.Index(fields=["day", "organization"], name="usage_day_org")]

    def __str__(self) -> str:
        return f"{self.organization_id} {self.pool_id} {self.day}"


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
        ordering = ["day", "organization", "instance_type"]
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
