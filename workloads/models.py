# Workloads, clusters and support cases land here (issues #4 and #5); this app imports tenants.

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from django.utils.formats import number_format
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from tenants.estimate import MAX_PARAMETERS, MAX_TOKENS
from tenants.models import Allocation, Framework, Organization, Region, TenantQuerySet

# --- Workloads and support cases (issue 5) -------------------------------------------------------
# Workload (+ WorkloadChange history), SupportCase (+ CaseEvent history), ReviewMeeting, ActionItem.
# Every write goes through workloads/services.py, which also records the history rows.

MAX_PARALLEL_DEGREE = 65_536  # per dimension; a 100,000-GPU run is about 2^17 accelerators in all
TOO_MANY_PARAMETERS = _("At most 100 trillion parameters.")
TOO_MANY_TOKENS = _("At most 10 quadrillion tokens.")
PARAMETERS = [MinValueValidator(1), MaxValueValidator(MAX_PARAMETERS, TOO_MANY_PARAMETERS)]
DEGREE = [MinValueValidator(1), MaxValueValidator(MAX_PARALLEL_DEGREE)]


class Workload(models.Model):
    """A tenant's training record: what it trains, with which framework, on what cluster and storage.

    Every change goes through workloads.services, which keeps one WorkloadChange per changed field.
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
        validators=[MinValueValidator(1), MaxValueValidator(MAX_TOKENS, TOO_MANY_TOKENS)],
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
    notes = models.TextField(_("notes"), blank=True)
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
        """Accelerators the parallelism layout needs (expert parallelism shards within data parallelism)."""
        return self.tensor_parallel * self.pipeline_parallel * self.data_parallel


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


class SupportCaseQuerySet(TenantQuerySet):
    def active(self) -> SupportCaseQuerySet:
        return self.filter(status__in=SupportCase.ACTIVE_STATUSES)


class SupportCase(models.Model):
    """A tenant's support case. Its history is CaseEvent, written only by workloads.services."""

    class Category(models.TextChoices):
        CAPACITY = "capacity", _("Capacity")
        NETWORKING = "networking", _("NCCL / EFA networking")
        STORAGE = "storage", _("Storage")
        NODE_HEALTH = "node_health", _("Node health")
        QUOTA = "quota", _("Quota / limits")
        FRAMEWORK = "framework", _("Framework / software")
        ACCOUNT = "account", _("Account / access")
        OTHER = "other", _("Other")

    class Severity(models.TextChoices):
        S1 = "s1", _("S1 · critical: training stopped")
        S2 = "s2", _("S2 · high: training degraded")
        S3 = "s3", _("S3 · normal")
        S4 = "s4", _("S4 · low: question")

    class Status(models.TextChoices):
        OPEN = "open", pgettext_lazy("case status", "Open")
        IN_PROGRESS = "in_progress", pgettext_lazy("case status", "In progress")
        WAITING_ON_TENANT = "waiting_on_tenant", pgettext_lazy("case status", "Waiting on tenant")
        RESOLVED = "resolved", pgettext_lazy("case status", "Resolved")
        CLOSED = "closed", pgettext_lazy("case status", "Closed")

    ACTIVE_STATUSES = (Status.OPEN, Status.IN_PROGRESS, Status.WAITING_ON_TENANT)
    DONE_STATUSES = (Status.RESOLVED, Status.CLOSED)

    organization = models.ForeignKey(
        Organization, on_delete=models.PROTECT, related_name="support_cases", verbose_name=_("organization")
    )
    title = models.CharField(_("title"), max_length=200)
    description = models.TextField(_("description"))
    category = models.CharField(_("category"), max_length=16, choices=Category.choices)
    severity = models.CharField(_("severity"), max_length=2, choices=Severity.choices, default=Severity.S3)
    status = models.CharField(_("status"), max_length=24, choices=Status.choices, default=Status.OPEN)
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="assigned_cases",
        verbose_name=_("assignee"),
        limit_choices_to={"staff_role__isnull": False},
    )
    workload = models.ForeignKey(
        Workload,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="support_cases",
        verbose_name=_("workload"),
    )
    opened_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+", verbose_name=_("opened by")
    )
    opened_by_staff = models.BooleanField(_("opened by program staff"), default=False)
    created_at = models.DateTimeField(_("opened at"), auto_now_add=True, db_index=True)
    # The last event a tenant can see: internal notes never move it, so it reveals nothing.
    updated_at = models.DateTimeField(_("last update"), default=timezone.now)
    first_response_at = models.DateTimeField(_("first response at"), null=True, blank=True)
    # When the case last left the active statuses (resolved or closed); cleared on reopening.
    resolved_at = models.DateTimeField(_("resolved at"), null=True, blank=True)

    objects = SupportCaseQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("support case")
        verbose_name_plural = _("support cases")
        indexes = [models.Index(fields=["organization", "status"])]

    def __str__(self) -> str:
        return f"#{self.pk} {self.title}"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE_STATUSES

    @property
    def is_closed(self) -> bool:
        return self.status == self.Status.CLOSED

    @property
    def open_until(self):
        """End of the time open: when it was resolved or closed, else now."""
        return self.resolved_at or timezone.now()


class CaseEventQuerySet(TenantQuerySet):
    def public(self) -> CaseEventQuerySet:
        """What a tenant may see: everything but internal notes."""
        return self.filter(internal=False)


class CaseEvent(models.Model):
    """One entry of a case's chronological history. Append-only: never edited, never deleted."""

    class Kind(models.TextChoices):
        OPENED = "opened", pgettext_lazy("case event", "Opened")
        COMMENT = "comment", pgettext_lazy("case event", "Comment")
        STATUS_CHANGED = "status", pgettext_lazy("case event", "Status changed")
        ASSIGNEE_CHANGED = "assignee", pgettext_lazy("case event", "Assignee changed")
        SEVERITY_CHANGED = "severity", pgettext_lazy("case event", "Severity changed")
        LINKED = "linked", pgettext_lazy("case event", "Linked")

    organization = models.ForeignKey(
        Organization, on_delete=models.PROTECT, related_name="+", verbose_name=_("organization")
    )
    case = models.ForeignKey(SupportCase, on_delete=models.PROTECT, related_name="events", verbose_name=_("case"))
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("by"),
    )
    kind = models.CharField(_("kind"), max_length=16, choices=Kind.choices)
    # Internal entries (staff notes, links to the staff-only weekly review) are never shown or mailed to tenants.
    internal = models.BooleanField(_("internal"), default=False, db_index=True)
    body = models.TextField(_("text"), blank=True)
    old_value = models.CharField(_("from"), max_length=200, blank=True)
    new_value = models.CharField(_("to"), max_length=200, blank=True)
    created_at = models.DateTimeField(_("at"), auto_now_add=True, db_index=True)
    # Delivery bookkeeping, not history: set once by the notification task (compare-and-set).
    notified_at = models.DateTimeField(_("notified at"), null=True, blank=True)

    objects = CaseEventQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "pk"]
        verbose_name = _("case event")
        verbose_name_plural = _("case events")
        indexes = [models.Index(fields=["case", "created_at"])]

    def __str__(self) -> str:
        return f"{self.case_id} {self.kind} {self.created_at:%Y-%m-%d %H:%M}"

    def save(self, *args, **kwargs) -> None:
        if self.pk is not None:
            raise ValueError("A case's history is append-only.")
        super().save(*args, **kwargs)

    def _display(self, value: str) -> str:
        if self.kind == self.Kind.STATUS_CHANGED:
            return str(SupportCase.Status(value).label) if value in SupportCase.Status.values else value
        if self.kind == self.Kind.SEVERITY_CHANGED:
            return str(SupportCase.Severity(value).label) if value in SupportCase.Severity.values else value
        return value

    @property
    def old_display(self) -> str:
        return self._display(self.old_value)

    @property
    def new_display(self) -> str:
        return self._display(self.new_value)


class ReviewMeeting(models.Model):
    """The program team's weekly review: one per ISO week (Monday, in the program's timezone)."""

    # Always a Monday: workloads.services.week_of() normalizes every date it is given.
    week_start = models.DateField(_("week starting"), unique=True)
    attendees = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="review_meetings", verbose_name=_("attendees")
    )
    other_attendees = models.CharField(_("other attendees"), max_length=500, blank=True)
    minutes = models.TextField(_("minutes"), blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+", verbose_name=_("created by")
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        ordering = ["-week_start"]
        verbose_name = _("review meeting")
        verbose_name_plural = _("review meetings")

    def __str__(self) -> str:
        return self.iso_week

    @property
    def iso_week(self) -> str:
        year, week, _day = self.week_start.isocalendar()
        return f"{year}-W{week:02d}"


class ActionItemQuerySet(TenantQuerySet):
    def visible_to(self, user) -> ActionItemQuerySet:
        # The weekly review is the program team's: staff see every item (program-wide ones too), tenants none.
        from tenants.access import is_program_staff

        return self.all() if is_program_staff(user) else self.none()


class ActionItem(models.Model):
    """A to-do from a review meeting. Open items carry forward to every later week until done."""

    class Status(models.TextChoices):
        OPEN = "open", pgettext_lazy("action item", "Open")
        DONE = "done", pgettext_lazy("action item", "Done")

    meeting = models.ForeignKey(
        ReviewMeeting, on_delete=models.PROTECT, related_name="action_items", verbose_name=_("meeting")
    )
    organization = models.ForeignKey(
        Organization,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("organization"),
    )
    text = models.CharField(_("action"), max_length=500)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("owner"),
    )
    due_on = models.DateField(_("due on"), null=True, blank=True)
    case = models.ForeignKey(
        SupportCase,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="action_items",
        verbose_name=_("support case"),
    )
    status = models.CharField(_("status"), max_length=8, choices=Status.choices, default=Status.OPEN)
    done_at = models.DateTimeField(_("done at"), null=True, blank=True)
    done_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("done by"),
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+", verbose_name=_("created by")
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    objects = ActionItemQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "pk"]
        verbose_name = _("action item")
        verbose_name_plural = _("action items")

    def __str__(self) -> str:
        return self.text


# ============================================================================================
# Clusters (issue #4): a tenant's training cluster in its own AWS account, its nodes, their
# health and run intervals. Writes go through workloads/cluster_services.py only.
# ============================================================================================

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

    # The lifecycle; every change goes through cluster_services.transition (compare-and-set).
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

    objects = ClusterQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("cluster")
        verbose_name_plural = _("clusters")
        constraints = [
            models.UniqueConstraint(fields=["cloud_name"], condition=~Q(cloud_name=""), name="unique_cloud_name"),
            models.CheckConstraint(condition=Q(threads_per_core__in=[1, 2]), name="cluster_threads_per_core"),
        ]
        indexes = [models.Index(fields=["status", "last_polled_at"])]

    def __str__(self) -> str:
        return self.name

    @property
    def is_in_flight(self) -> bool:
        return self.status in self.IN_FLIGHT

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
    launch_time = models.DateTimeField(_("launched at"), null=True, blank=True)
    first_seen_at = models.DateTimeField(_("first seen at"))
    last_seen_at = models.DateTimeField(_("last seen at"))
    gone_at = models.DateTimeField(_("gone at"), null=True, blank=True)

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


class NodeInterval(models.Model):
    """A node's run from launch to termination (open while it runs): the raw input of usage accounting."""

    organization = models.ForeignKey(
        Organization, on_delete=models.PROTECT, related_name="+", verbose_name=_("organization")
    )
    cluster = models.ForeignKey(
        Cluster, on_delete=models.CASCADE, related_name="node_intervals", verbose_name=_("cluster")
    )
    node = models.ForeignKey(ClusterNode, on_delete=models.CASCADE, related_name="intervals")
    instance_id = models.CharField(_("instance id"), max_length=64)
    instance_type = models.CharField(_("instance type"), max_length=40)
    started_at = models.DateTimeField(_("started at"))
    ended_at = models.DateTimeField(_("ended at"), null=True, blank=True)

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

    def __str__(self) -> str:
        return f"{self.instance_id} {self.started_at} – {self.ended_at or '…'}"
