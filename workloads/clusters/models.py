"""Clusters: a tenant's training cluster in its own AWS account, its instance groups, its nodes as the cloud
last listed them, and its timeline. Writes go through workloads.clusters (services, lifecycle, provisioning)."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.utils.translation import gettext_lazy as _

from tenants.models import Allocation, Organization, Region, TenantQuerySet
from workloads.records.models import Workload

CLUSTER_NAME = RegexValidator(
    r"^[a-z][a-z0-9-]{0,39}$",
    _("Use lowercase letters, digits and hyphens, starting with a letter (at most 40 characters)."),
)
S3_URI = RegexValidator(
    r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?$", _("Enter an S3 URI such as s3://bucket/prefix/.")
)
FSX_LUSTRE_MAX_GIB = 1_000_800  # FSx for Lustre PERSISTENT_2 sizes: 1,200, 2,400 and multiples of 2,400 GiB


def validate_lustre_capacity(gib: int) -> None:
    if gib != 1200 and (gib % 2400 or not 0 < gib <= FSX_LUSTRE_MAX_GIB):
        raise ValidationError(
            _("FSx for Lustre comes in 1,200 GiB, 2,400 GiB or a multiple of 2,400 GiB (up to %(max)s GiB)."),
            params={"max": f"{FSX_LUSTRE_MAX_GIB:,}"},
            code="lustre_capacity",
        )


class OrgCloudSettings(models.Model):
    """Where an organization's clusters go: lifecycle scripts, execution role and network. Set by the
    program team (admin) when the org's account is linked; the cluster form starts from these."""

    organization = models.OneToOneField(
        Organization, on_delete=models.PROTECT, related_name="cloud_settings", verbose_name=_("organization")
    )
    lifecycle_s3_uri = models.CharField(
        _("lifecycle scripts (S3)"),
        max_length=500,
        validators=[S3_URI],
        help_text=_("HyperPod runs on_create.sh from here on every node."),
    )
    execution_role_arn = models.CharField(_("instance execution role ARN"), max_length=600)
    subnet_ids = models.JSONField(_("subnet ids"), default=list)
    security_group_ids = models.JSONField(_("security group ids"), default=list)
    eks_cluster_arn = models.CharField(_("EKS cluster ARN (HyperPod on EKS)"), max_length=600, blank=True)
    ssh_key_name = models.CharField(_("SSH key pair (ParallelCluster head node)"), max_length=255, blank=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        verbose_name = _("cloud settings")
        verbose_name_plural = _("cloud settings")

    def __str__(self) -> str:
        return f"{self.organization}: {self.lifecycle_s3_uri}"


class ClusterQuerySet(TenantQuerySet):
    def live(self) -> ClusterQuerySet:
        """Clusters that hold (or are about to hold) instances of the org's allocation."""
        return self.filter(status__in=Cluster.LIVE)

    def to_poll(self) -> ClusterQuerySet:
        return self.filter(status__in=Cluster.POLLED)


class Cluster(models.Model):
    class Kind(models.TextChoices):
        HYPERPOD_SLURM = "hyperpod_slurm", _("HyperPod (Slurm)")
        HYPERPOD_EKS = "hyperpod_eks", _("HyperPod (EKS)")
        PARALLELCLUSTER = "parallelcluster", _("ParallelCluster (Slurm)")

    class Status(models.TextChoices):
        REQUESTED = "requested", _("Requested")
        PROVISIONING = "provisioning", _("Provisioning")
        IN_SERVICE = "in_service", _("In service")
        DEGRADED = "degraded", _("Degraded")
        DELETING = "deleting", _("Deleting")
        DELETED = "deleted", _("Deleted")
        FAILED = "failed", _("Failed")

    class Storage(models.TextChoices):
        NONE = "none", _("No shared file system")
        FSX_LUSTRE_NEW = "fsx_lustre_new", _("New FSx for Lustre linked to S3")
        FSX_EXISTING = "fsx_existing", _("Existing FSx for Lustre file system")

    # The lifecycle; every change goes through workloads.clusters.lifecycle.transition (compare-and-set).
    TRANSITIONS: dict[str, frozenset[str]] = {
        Status.REQUESTED: frozenset({Status.PROVISIONING, Status.DELETING, Status.FAILED}),
        Status.PROVISIONING: frozenset({Status.IN_SERVICE, Status.DEGRADED, Status.FAILED, Status.DELETING}),
        Status.IN_SERVICE: frozenset({Status.DEGRADED, Status.DELETING, Status.FAILED}),
        Status.DEGRADED: frozenset({Status.IN_SERVICE, Status.DELETING, Status.FAILED}),
        Status.DELETING: frozenset({Status.DELETED, Status.FAILED}),
        Status.FAILED: frozenset({Status.REQUESTED, Status.DELETING}),
        Status.DELETED: frozenset(),
    }
    LIVE = (Status.REQUESTED, Status.PROVISIONING, Status.IN_SERVICE, Status.DEGRADED, Status.DELETING)
    POLLED = (Status.PROVISIONING, Status.IN_SERVICE, Status.DEGRADED, Status.DELETING)
    IN_FLIGHT = (Status.REQUESTED, Status.PROVISIONING, Status.DELETING)
    MAX_RETRIES = 8  # of a provisioning or deletion task after transient cloud errors (workloads.clusters.tasks)

    organization = models.ForeignKey(
        Organization, on_delete=models.PROTECT, related_name="clusters", verbose_name=_("organization")
    )
    allocation = models.ForeignKey(
        Allocation, on_delete=models.PROTECT, related_name="clusters", verbose_name=_("allocation")
    )
    workload = models.ForeignKey(
        Workload,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="clusters",
        verbose_name=_("workload"),
    )
    name = models.CharField(_("name"), max_length=40, validators=[CLUSTER_NAME])
    kind = models.CharField(_("kind"), max_length=32, choices=Kind.choices, default=Kind.HYPERPOD_SLURM)
    region = models.CharField(_("region"), max_length=32, choices=Region.choices)
    status = models.CharField(_("status"), max_length=16, choices=Status.choices, default=Status.REQUESTED)
    status_message = models.TextField(_("status message"), blank=True)
    # Deterministic per provisioning attempt: a retried or redelivered task finds the cluster it
    # created instead of creating a second one.
    attempt = models.PositiveSmallIntegerField(_("attempt"), default=1)
    cloud_name = models.CharField(_("name in AWS"), max_length=63, blank=True)
    cloud_id = models.CharField(_("ARN or stack id"), max_length=600, blank=True)
    lifecycle_s3_uri = models.CharField(_("lifecycle scripts (S3)"), max_length=500, blank=True)
    execution_role_arn = models.CharField(_("instance execution role ARN"), max_length=600, blank=True)
    subnet_ids = models.JSONField(_("subnet ids"), default=list)
    security_group_ids = models.JSONField(_("security group ids"), default=list)
    eks_cluster_arn = models.CharField(_("EKS cluster ARN"), max_length=600, blank=True)
    ssh_key_name = models.CharField(_("SSH key pair"), max_length=255, blank=True)
    threads_per_core = models.PositiveSmallIntegerField(
        _("threads per core"), default=1, validators=[MinValueValidator(1), MaxValueValidator(2)]
    )
    storage = models.CharField(_("shared storage"), max_length=32, choices=Storage.choices, default=Storage.NONE)
    fsx_file_system_id = models.CharField(_("FSx file system id"), max_length=64, blank=True)
    s3_data_repository_path = models.CharField(_("S3 data repository"), max_length=500, blank=True, validators=[S3_URI])
    storage_capacity_gib = models.PositiveIntegerField(
        _("storage capacity (GiB)"), default=1200, validators=[validate_lustre_capacity]
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("created by"),
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    status_changed_at = models.DateTimeField(_("status changed at"), auto_now_add=True)
    last_polled_at = models.DateTimeField(_("last polled at"), null=True, blank=True)
    # The worker's progress on provisioning or deletion, for the page and for the reconciler
    # (workloads.clusters.reconcile): the last transient error, how many attempts failed, when the next is
    # due, and while one runs, the time limit it ends by. Past those (plus a grace) nothing is known to be
    # working on the cluster and its task is sent again.
    last_error = models.CharField(
        _("last error"),
        max_length=500,
        blank=True,
        help_text=_("The last transient error while provisioning or deleting; empty once an attempt gets through."),
    )
    retries = models.PositiveSmallIntegerField(
        _("retries"), default=0, help_text=_("Retries of the current provisioning or deletion so far.")
    )
    next_attempt_at = models.DateTimeField(
        _("next attempt at"),
        null=True,
        blank=True,
        help_text=_("When the next attempt is due: a scheduled retry, or work queued for a worker."),
    )
    running_until = models.DateTimeField(
        _("running until"),
        null=True,
        blank=True,
        help_text=_("While an attempt runs: the time limit it finishes by (or its worker is gone)."),
    )
    # The running provisioning attempt's claim on the cluster: a token of its own, renewed (compare-and-set on the
    # token) by a heartbeat while it works. A lease that ran out means its worker is gone: the reconciler sends the
    # work again within the lease, not the time limit, and a deletion does not conclude while a live attempt may
    # still be creating the cloud cluster (workloads.clusters.progress).
    claim = models.CharField(_("claimed by attempt"), max_length=32, blank=True)
    heartbeat_at = models.DateTimeField(_("last heartbeat"), null=True, blank=True)
    lease_until = models.DateTimeField(
        _("lease until"),
        null=True,
        blank=True,
        help_text=_("While an attempt runs: its claim on the cluster lasts until then unless its heartbeat renews it."),
    )
    # What the cluster itself reports (workloads.reporting): when its reporter last posted, how often it says it
    # runs (silent after three intervals without a report), and the Slurm node names it maps to hosts.
    last_report_at = models.DateTimeField(_("last report"), null=True, blank=True)
    report_interval_seconds = models.PositiveIntegerField(_("report interval (seconds)"), default=300)
    reporter_silent_since = models.DateTimeField(_("reporter silent since"), null=True, blank=True)
    slurm_nodes = models.JSONField(
        _("Slurm node names"),
        default=dict,
        blank=True,
        help_text=_("Slurm node name → host name or address, from the reporter's sinfo."),
    )
    # Partitions giving each job whole nodes (OverSubscribe=EXCLUSIVE), from the reporter's scontrol: a job there
    # without gres holds its nodes' accelerators (workloads.jobs.sacct).
    slurm_exclusive_partitions = models.JSONField(
        _("exclusive Slurm partitions"),
        default=list,
        blank=True,
        help_text=_("Partitions with OverSubscribe=EXCLUSIVE, from the reporter's scontrol show partition."),
    )
    # Set by an nccl-tests run under its baseline (workloads.validation), cleared by the next one that passes.
    interconnect_suspect_since = models.DateTimeField(_("interconnect suspect since"), null=True, blank=True)

    objects = ClusterQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("cluster")
        verbose_name_plural = _("clusters")
        constraints = [
            models.UniqueConstraint(fields=["cloud_name"], condition=~Q(cloud_name=""), name="unique_cloud_name"),
            models.CheckConstraint(condition=Q(threads_per_core__in=[1, 2]), name="cluster_threads_per_core"),
        ]
        indexes = [
            models.Index(fields=["status", "last_polled_at"]),
            # The landing page's silent reporters and suspect interconnects, longest first
            models.Index(
                fields=["reporter_silent_since", "id"],
                condition=Q(reporter_silent_since__isnull=False),
                name="cluster_silent",
            ),
            models.Index(
                fields=["interconnect_suspect_since", "id"],
                condition=Q(interconnect_suspect_since__isnull=False),
                name="cluster_suspect",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_in_flight(self) -> bool:
        return self.status in self.IN_FLIGHT

    @property
    def is_retrying(self) -> bool:
        return self.is_in_flight and bool(self.last_error)

    @property
    def can_delete(self) -> bool:
        return self.Status.DELETING in self.TRANSITIONS[self.status]

    @property
    def can_retry(self) -> bool:
        return self.status == self.Status.FAILED and not self.cloud_deleted_on_failure

    @property
    def cloud_deleted_on_failure(self) -> bool:
        # A cluster that failed while being deleted is not retried: it is deleted again.
        return self.status == self.Status.FAILED and self.status_message.startswith("delete:")


class ClusterInstanceGroup(models.Model):
    """Instance type × count; worker groups count against the allocation, the controller does not."""

    class Role(models.TextChoices):
        CONTROLLER = "controller", _("Controller")
        LOGIN = "login", _("Login")
        WORKER = "worker", _("Worker")

    organization = models.ForeignKey(
        Organization, on_delete=models.PROTECT, related_name="+", verbose_name=_("organization")
    )
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="groups", verbose_name=_("cluster"))
    name = models.CharField(_("group name"), max_length=63)
    role = models.CharField(_("role"), max_length=16, choices=Role.choices, default=Role.WORKER)
    instance_type = models.CharField(_("instance type"), max_length=40)
    instance_count = models.PositiveIntegerField(_("instances"), validators=[MinValueValidator(1)])

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["cluster", "role", "name"]
        verbose_name = _("instance group")
        verbose_name_plural = _("instance groups")
        constraints = [models.UniqueConstraint(fields=["cluster", "name"], name="unique_group_name_per_cluster")]

    def __str__(self) -> str:
        return f"{self.name}: {self.instance_count} × {self.instance_type}"


class ClusterNode(models.Model):
    """One instance of a cluster as the cloud last reported it."""

    UNHEALTHY = frozenset({"Failure", "NotFound"})

    organization = models.ForeignKey(
        Organization, on_delete=models.PROTECT, related_name="+", verbose_name=_("organization")
    )
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="nodes", verbose_name=_("cluster"))
    instance_id = models.CharField(_("instance id"), max_length=64)
    group_name = models.CharField(_("group"), max_length=63)
    instance_type = models.CharField(_("instance type"), max_length=40)
    status = models.CharField(_("status"), max_length=40)
    status_message = models.CharField(_("status message"), max_length=500, blank=True)
    # The node's private host name as the cloud gives it (ip-10-1-0-7…): how Slurm and the GPU exporter name it.
    hostname = models.CharField(_("host name"), max_length=255, blank=True)
    launch_time = models.DateTimeField(_("launched at"), null=True, blank=True)
    first_seen_at = models.DateTimeField(_("first seen at"))
    last_seen_at = models.DateTimeField(_("last seen at"))
    gone_at = models.DateTimeField(_("gone at"), null=True, blank=True)
    # The GPU exporter's throttling counters from the last snapshot posted for this node (workloads.health):
    # a violation is judged on the increase between two snapshots.
    gpu_counters = models.JSONField(default=dict, blank=True)
    gpu_read_at = models.DateTimeField(_("GPU telemetry read at"), null=True, blank=True)
    # What the last GPU read could not say: GPU index -> the health event kinds whose DCGM field came blank (not
    # supported by this GPU or vGPU); the board shows them as "n/s" rather than as normal.
    gpu_unsupported = models.JSONField(default=dict, blank=True)
    # Trainium: the share of the node's NeuronCores busy at that read (Neuron monitor; idle cores count as 0), for
    # busy hours where Slurm says nothing.
    accelerator_utilization = models.FloatField(_("accelerator utilization"), null=True, blank=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["group_name", "instance_id"]
        verbose_name = _("cluster node")
        verbose_name_plural = _("cluster nodes")
        constraints = [models.UniqueConstraint(fields=["cluster", "instance_id"], name="unique_node_per_cluster")]

    def __str__(self) -> str:
        return self.instance_id

    @property
    def is_healthy(self) -> bool:
        return self.gone_at is None and self.status not in self.UNHEALTHY


class ClusterEvent(models.Model):
    """The cluster's timeline: status changes (from → to), actions and cloud messages, append-only."""

    organization = models.ForeignKey(
        Organization, on_delete=models.PROTECT, related_name="+", verbose_name=_("organization")
    )
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="events", verbose_name=_("cluster"))
    from_status = models.CharField(_("from"), max_length=16, choices=Cluster.Status.choices, blank=True)
    to_status = models.CharField(_("to"), max_length=16, choices=Cluster.Status.choices, blank=True)
    message = models.TextField(_("message"), blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(_("at"), auto_now_add=True, db_index=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "pk"]
        verbose_name = _("cluster event")
        verbose_name_plural = _("cluster events")

    def __str__(self) -> str:
        return f"{self.cluster} {self.from_status} → {self.to_status}"


def cluster_instances(workload_ref: str = "pk") -> models.Expression:
    """An annotation: the worker instances a workload's live clusters hold (the controller and login nodes do not
    count against an allocation), 0 when it has none. One subquery, whatever the number of rows annotated."""
    held = (
        ClusterInstanceGroup.objects.filter(
            cluster__workload=models.OuterRef(workload_ref),
            cluster__status__in=Cluster.LIVE,
            role=ClusterInstanceGroup.Role.WORKER,
        )
        .order_by()
        .values("cluster__workload")
        .annotate(total=models.Sum("instance_count"))
        .values("total")
    )
    return Coalesce(models.Subquery(held, output_field=models.IntegerField()), 0)
