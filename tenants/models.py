"""The tenant core: the program, its capacity catalog and pools, organizations and who belongs where."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import F, Q
from django.urls import reverse
from django.utils.text import capfirst
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from tenants import audit_labels
from tenants.capacity.estimate import MAX_INSTANCES, MAX_PARAMETERS, MAX_TOKENS, PARAMETER_COUNT, TOKEN_COUNT
from tenants.sso.models import GrantSource, OidcIdentity  # noqa: F401 (registered in this app)

AWS_ACCOUNT_ID = RegexValidator(r"^\d{12}$", _("An AWS account id is exactly 12 digits."))
IAM_ROLE_ARN = RegexValidator(
    r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]{1,512}$",
    _("Enter an IAM role ARN such as arn:aws:iam::123456789012:role/PortalAccess."),
)


class Region(models.TextChoices):
    US_EAST_1 = "us-east-1", _("US East (N. Virginia)")
    AP_NORTHEAST_1 = "ap-northeast-1", _("Asia Pacific (Tokyo)")


# What a person may type into one free-text field (a justification, a case description, a comment).
FREE_TEXT_MAX = 20_000


class Program(models.Model):
    """A funding cycle: the window every pool and allocation lives in."""

    name = models.CharField(_("name"), max_length=200)
    slug = models.SlugField(_("slug"), unique=True)
    starts_on = models.DateField(_("starts on"))
    ends_on = models.DateField(_("ends on"))
    timezone = models.CharField(_("timezone"), max_length=64, default="Asia/Tokyo")
    currency = models.CharField(_("reporting currency"), max_length=3, default="JPY")
    usd_exchange_rate = models.DecimalField(
        _("exchange rate (currency per USD)"),
        max_digits=12,
        decimal_places=4,
        default=Decimal("150"),
        validators=[MinValueValidator(Decimal("0.0001"))],
    )
    # An organization whose utilization of its allocations falls below this in a week is flagged idle.
    idle_threshold = models.DecimalField(
        _("idle below utilization"),
        max_digits=3,
        decimal_places=2,
        default=Decimal("0.50"),
        validators=[MinValueValidator(Decimal("0")), MaxValueValidator(Decimal("1"))],
        help_text=_("A fraction: 0.50 flags organizations that ran less than half of what they were allocated."),
    )

    class Meta:
        ordering = ["-starts_on"]
        verbose_name = _("program")
        verbose_name_plural = _("programs")
        constraints = [
            models.CheckConstraint(condition=Q(ends_on__gt=F("starts_on")), name="program_ends_after_start"),
        ]

    def __str__(self) -> str:
        return self.name


class InstanceType(models.Model):
    """The accelerator catalog, seeded from tenants/data/instance_types.json and editable in admin."""

    api_name = models.CharField(_("API name"), max_length=40, unique=True)
    accelerator = models.CharField(_("accelerator"), max_length=60)
    accelerators_per_instance = models.PositiveSmallIntegerField(_("accelerators per instance"))
    # What a parallel layout (TP × PP × DP) places one rank on: a GPU, or on Trainium a NeuronCore (two per chip).
    ranks_per_instance = models.PositiveSmallIntegerField(
        _("ranks per instance"),
        help_text=_("Processes a training layout runs per instance: one per GPU; one per NeuronCore on Trainium."),
    )
    accelerator_memory_gib = models.PositiveIntegerField(_("memory per accelerator (GiB)"))
    peak_bf16_tflops = models.PositiveIntegerField(_("peak dense BF16 TFLOPS per accelerator"))
    vcpus = models.PositiveSmallIntegerField(_("vCPUs"))
    memory_gib = models.PositiveIntegerField(_("memory (GiB)"))
    efa_gbps = models.PositiveIntegerField(_("EFA bandwidth (Gbps)"))

    class Meta:
        ordering = ["api_name"]
        verbose_name = _("instance type")
        verbose_name_plural = _("instance types")

    def __str__(self) -> str:
        return self.api_name

    @property
    def total_accelerator_memory_gib(self) -> int:
        return self.accelerators_per_instance * self.accelerator_memory_gib


class InstancePrice(models.Model):
    """On-demand price of an instance type in a region. No row means the region does not offer it."""

    instance_type = models.ForeignKey(
        InstanceType, on_delete=models.CASCADE, related_name="prices", verbose_name=_("instance type")
    )
    region = models.CharField(_("region"), max_length=32, choices=Region.choices)
    usd_per_hour = models.DecimalField(
        _("USD per hour"), max_digits=10, decimal_places=4, validators=[MinValueValidator(Decimal("0"))]
    )
    price_date = models.DateField(_("price taken on"))
    source = models.CharField(_("source"), max_length=200, blank=True)

    class Meta:
        ordering = ["instance_type__api_name", "region"]
        verbose_name = _("instance price")
        verbose_name_plural = _("instance prices")
        constraints = [
            models.UniqueConstraint(fields=["instance_type", "region"], name="one_price_per_type_and_region"),
        ]

    def __str__(self) -> str:
        return f"{self.instance_type} {self.region}: {self.usd_per_hour} USD/h"


class CapacityPool(models.Model):
    """Program capacity of one instance type in one region; `spare` is held back for node replacements."""

    program = models.ForeignKey(Program, on_delete=models.PROTECT, related_name="pools", verbose_name=_("program"))
    instance_type = models.ForeignKey(
        InstanceType, on_delete=models.PROTECT, related_name="pools", verbose_name=_("instance type")
    )
    region = models.CharField(_("region"), max_length=32, choices=Region.choices)
    capacity_reservation_id = models.CharField(_("capacity reservation id"), max_length=64, blank=True)
    total_instances = models.PositiveIntegerField(_("total instances"), validators=[MinValueValidator(1)])
    spare_instances = models.PositiveIntegerField(_("spare instances"), default=0)
    starts_on = models.DateField(_("starts on"))
    ends_on = models.DateField(_("ends on"))

    class Meta:
        ordering = ["program", "instance_type__api_name", "region"]
        verbose_name = _("capacity pool")
        verbose_name_plural = _("capacity pools")
        constraints = [
            models.UniqueConstraint(
                fields=["program", "instance_type", "region", "capacity_reservation_id"], name="unique_pool"
            ),
            models.CheckConstraint(
                condition=Q(spare_instances__lt=F("total_instances")), name="pool_spare_below_total"
            ),
            models.CheckConstraint(condition=Q(ends_on__gt=F("starts_on")), name="pool_ends_after_start"),
        ]

    def __str__(self) -> str:
        return f"{self.instance_type} · {self.region}"

    @property
    def allocatable_instances(self) -> int:
        return self.total_instances - self.spare_instances

    @property
    def total_accelerators(self) -> int:
        return self.total_instances * self.instance_type.accelerators_per_instance


class OrganizationQuerySet(models.QuerySet):
    def visible_to(self, user) -> OrganizationQuerySet:
        """The one rule of who sees which tenant: program staff see every organization, a tenant the ones it
        is a member of. tenants.access and every TenantQuerySet read it from here."""
        if StaffRole.of(user) is not None:
            return self.all()
        if not user.is_authenticated:
            return self.none()
        return self.filter(memberships__user=user)


class Organization(models.Model):
    """A tenant: one funded organization and the AWS account it trains in."""

    name = models.CharField(_("name"), max_length=200, unique=True)
    slug = models.SlugField(_("slug"), unique=True)
    aws_account_id = models.CharField(_("AWS account id"), max_length=12, blank=True, validators=[AWS_ACCOUNT_ID])
    role_arn = models.CharField(_("cross-account role ARN"), max_length=600, blank=True, validators=[IAM_ROLE_ARN])
    external_id = models.CharField(_("external id"), max_length=200, blank=True)
    lead_engineer = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="led_organizations",
        verbose_name=_("lead support engineer"),
        limit_choices_to={"staff_role__isnull": False},
    )
    contact_name = models.CharField(_("contact name"), max_length=200, blank=True)
    contact_email = models.EmailField(_("contact email"), blank=True)
    language = models.CharField(
        _("email language"),
        max_length=8,
        choices=settings.LANGUAGES,
        default=settings.LANGUAGE_CODE,
        help_text=_("The language of the email the portal sends the organization's members and contact."),
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    objects = OrganizationQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        verbose_name = _("organization")
        verbose_name_plural = _("organizations")

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    class Role(models.TextChoices):
        ADMIN = "admin", pgettext_lazy("membership role", "Admin")
        MEMBER = "member", pgettext_lazy("membership role", "Member")
        VIEWER = "viewer", pgettext_lazy("membership role", "Viewer")

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships", verbose_name=_("user")
    )
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="memberships", verbose_name=_("organization")
    )
    role = models.CharField(_("role"), max_length=16, choices=Role.choices, default=Role.MEMBER)
    # Granted here (staff, the org's admins, an invitation), or by the groups the person's institution sends at
    # sign-in, which then also change or remove it (tenants/sso/). Sign-in never touches a grant made here.
    source = models.CharField(_("granted by"), max_length=8, choices=GrantSource.choices, default=GrantSource.LOCAL)
    created_at = models.DateTimeField(_("joined at"), auto_now_add=True)

    class Meta:
        ordering = ["organization__name", "user__username"]
        verbose_name = _("membership")
        verbose_name_plural = _("memberships")
        constraints = [models.UniqueConstraint(fields=["user", "organization"], name="one_membership_per_org")]

    def __str__(self) -> str:
        return f"{self.user} @ {self.organization} ({self.get_role_display()})"

    @property
    def is_admin(self) -> bool:
        return self.role == self.Role.ADMIN


class StaffRole(models.Model):
    """Program staff see every organization; what else they may do depends on the role."""

    class Role(models.TextChoices):
        PROGRAM_MANAGER = "program_manager", _("Program manager")
        SUPPORT_ENGINEER = "support_engineer", _("Support engineer")

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="staff_role", verbose_name=_("user")
    )
    role = models.CharField(_("role"), max_length=32, choices=Role.choices)
    source = models.CharField(_("granted by"), max_length=8, choices=GrantSource.choices, default=GrantSource.LOCAL)

    class Meta:
        verbose_name = _("program staff role")
        verbose_name_plural = _("program staff roles")

    def __str__(self) -> str:
        return f"{self.user} ({self.get_role_display()})"

    @property
    def is_program_manager(self) -> bool:
        return self.role == self.Role.PROGRAM_MANAGER

    @classmethod
    def of(cls, user) -> StaffRole | None:
        """The user's program staff role; None for anonymous users and tenants."""
        if user is None or not user.is_authenticated:
            return None
        try:
            return user.staff_role
        except cls.DoesNotExist:
            return None


class TenantQuerySet(models.QuerySet):
    """The one gate for tenant rows: every tenant-owned model's manager, every view goes through it."""

    def for_org(self, org: Organization) -> TenantQuerySet:
        return self.filter(organization=org)

    def visible_to(self, user) -> TenantQuerySet:
        if StaffRole.of(user) is not None:
            return self.all()  # staff see every organization: no subquery over all of them in every count
        return self.filter(organization__in=Organization.objects.visible_to(user))


# --- Capacity: requests, allocations and their audit trail ---------------------------------------


class Framework(models.TextChoices):
    """Training frameworks, for capacity requests and workload records alike."""

    PYTORCH_FSDP = "pytorch_fsdp", _("PyTorch FSDP")
    MEGATRON = "megatron", _("Megatron-LM / NeMo")
    DEEPSPEED = "deepspeed", _("DeepSpeed")
    HF_TRAINER = "hf_trainer", _("Hugging Face Trainer / Accelerate")
    NEURONX = "neuronx", _("NeuronX Distributed")
    TORCHTITAN = "torchtitan", _("torchtitan")
    JAX = "jax", _("JAX")
    VERL = "verl", _("veRL")
    OTHER = "other", _("Other")


class CapacityRequest(audit_labels.Numbered, models.Model):
    """A tenant's ask for instances of one type in one region over a window (dates inclusive)."""

    class Status(models.TextChoices):
        DRAFT = "draft", _("Draft")
        SUBMITTED = "submitted", _("Submitted")
        APPROVED = "approved", _("Approved")
        PARTIALLY_APPROVED = "partially_approved", _("Partially approved")
        REJECTED = "rejected", _("Rejected")
        WITHDRAWN = "withdrawn", _("Withdrawn")

    class Kind(models.TextChoices):
        NEW = "new", _("New allocation")
        EXTENSION = "extension", _("Extend an allocation")
        ENLARGEMENT = "enlargement", _("Enlarge an allocation")

    organization = models.ForeignKey(
        Organization, on_delete=models.PROTECT, related_name="capacity_requests", verbose_name=_("organization")
    )
    kind = models.CharField(_("kind"), max_length=16, choices=Kind.choices, default=Kind.NEW)
    base_allocation = models.ForeignKey(
        "Allocation",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="change_requests",
        verbose_name=_("allocation to extend or enlarge"),
    )
    pool = models.ForeignKey(CapacityPool, on_delete=models.PROTECT, related_name="requests", verbose_name=_("pool"))
    instance_count = models.PositiveIntegerField(
        _("instances"), validators=[MinValueValidator(1), MaxValueValidator(MAX_INSTANCES)]
    )
    starts_on = models.DateField(_("first day"))
    ends_on = models.DateField(_("last day"))
    start_slack_days = models.PositiveIntegerField(_("start slack (days)"), default=0)  # days the window may move
    justification = models.TextField(_("justification"), max_length=FREE_TEXT_MAX)
    # The optional training plan behind the request; the estimate is computed from it.
    parameter_count = models.BigIntegerField(
        _("parameters"), null=True, blank=True, validators=[PARAMETER_COUNT, MaxValueValidator(MAX_PARAMETERS)]
    )
    training_tokens = models.BigIntegerField(
        _("training tokens"), null=True, blank=True, validators=[TOKEN_COUNT, MaxValueValidator(MAX_TOKENS)]
    )
    framework = models.CharField(_("framework"), max_length=32, choices=Framework.choices, blank=True)
    expected_mfu = models.DecimalField(
        _("expected model FLOPs utilization"),
        max_digits=4,
        decimal_places=3,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0.01")), MaxValueValidator(Decimal("1"))],
    )
    status = models.CharField(_("status"), max_length=24, choices=Status.choices, default=Status.DRAFT)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+", verbose_name=_("created by")
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    submitted_at = models.DateTimeField(_("submitted at"), null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("decided by"),
    )
    decided_at = models.DateTimeField(_("decided at"), null=True, blank=True)
    decision_comment = models.TextField(_("decision comment"), blank=True, max_length=FREE_TEXT_MAX)

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("capacity request")
        verbose_name_plural = _("capacity requests")
        constraints = [
            models.CheckConstraint(condition=Q(ends_on__gte=F("starts_on")), name="request_ends_after_start"),
        ]
        indexes = [  # one per list ordering (tests/tenants/test_indexes.py): pages never sort the whole table
            models.Index(fields=["status", "submitted_at", "id"], name="request_queue"),
            models.Index(fields=["created_at", "id"], name="request_created"),
            models.Index(fields=["organization", "created_at", "id"], name="request_org_created"),
            models.Index(fields=["submitted_at", "id"], name="request_submitted"),
            models.Index(fields=["starts_on", "id"], name="request_starts"),
            models.Index(fields=["instance_count", "id"], name="request_size"),
        ]

    def __str__(self) -> str:
        return f"{self.number} {self.organization}: {self.instance_count} × {self.pool}"

    @property
    def days(self) -> int:
        return (self.ends_on - self.starts_on).days + 1

    @property
    def instance_hours(self) -> int:
        return self.instance_count * self.days * 24

    @property
    def is_open(self) -> bool:
        return self.status in (self.Status.DRAFT, self.Status.SUBMITTED)

    @property
    def granted(self) -> Allocation | None:
        """The allocation the decision made, None before a grant (a request not approved costs no query)."""
        if self.status not in (self.Status.APPROVED, self.Status.PARTIALLY_APPROVED):
            return None
        try:
            return self.allocation
        except ObjectDoesNotExist:
            return None

    @property
    def granted_count(self) -> int | None:
        """Instances the decision granted, None before a grant. After a partial approval it is less than asked:
        pages show both, and the estimate is made on what was granted."""
        return self.granted.instance_count if self.granted else None


class AllocationQuerySet(TenantQuerySet):
    def holding_capacity(self) -> AllocationQuerySet:
        """Allocations that count against a pool: everything but revoked ones (expired ones are in the past)."""
        return self.exclude(status=Allocation.Status.REVOKED)

    def overlapping(self, starts_on, ends_on) -> AllocationQuerySet:
        return self.filter(starts_on__lte=ends_on, ends_on__gte=starts_on)


class Allocation(audit_labels.Numbered, models.Model):
    """Instances of a pool granted to an organization over a window (dates inclusive). Invariant: on every day,
    the allocations holding capacity in a pool sum to at most pool.total_instances - pool.spare_instances.
    Only tenants.capacity (decisions, allocations) creates or changes them."""

    class Status(models.TextChoices):
        SCHEDULED = "scheduled", _("Scheduled")
        ACTIVE = "active", _("Active")
        EXPIRED = "expired", _("Expired")
        REVOKED = "revoked", _("Revoked")

    organization = models.ForeignKey(
        Organization, on_delete=models.PROTECT, related_name="allocations", verbose_name=_("organization")
    )
    pool = models.ForeignKey(CapacityPool, on_delete=models.PROTECT, related_name="allocations", verbose_name=_("pool"))
    request = models.OneToOneField(
        CapacityRequest,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="allocation",
        verbose_name=_("source request"),
    )
    instance_count = models.PositiveIntegerField(_("instances"), validators=[MinValueValidator(1)])
    starts_on = models.DateField(_("first day"))
    ends_on = models.DateField(_("last day"))
    status = models.CharField(_("status"), max_length=16, choices=Status.choices, default=Status.SCHEDULED)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("revoked by"),
    )
    revoked_at = models.DateTimeField(_("revoked at"), null=True, blank=True)
    revoke_reason = models.TextField(_("reason for revoking"), blank=True, max_length=FREE_TEXT_MAX)

    objects = AllocationQuerySet.as_manager()

    class Meta:
        ordering = ["starts_on", "pk"]
        verbose_name = _("allocation")
        verbose_name_plural = _("allocations")
        constraints = [
            models.CheckConstraint(condition=Q(ends_on__gte=F("starts_on")), name="allocation_ends_after_start"),
        ]
        indexes = [  # the pool's window for the chart, then one per list ordering (tests/tenants/test_indexes.py)
            models.Index(fields=["pool", "starts_on", "ends_on"]),
            # The pool timeline: its largest holders (a sum per organization, read in the index's order without
            # touching the table on PostgreSQL) and their allocations (a range per organization).
            models.Index(
                fields=["pool", "organization", "starts_on"],
                include=["ends_on", "instance_count", "status"],
                name="allocation_pool_org",
            ),
            models.Index(fields=["starts_on", "id"], name="allocation_starts"),
            models.Index(fields=["organization", "starts_on", "id"], name="allocation_org_starts"),
            models.Index(fields=["ends_on", "id"], name="allocation_ends"),
            models.Index(fields=["instance_count", "id"], name="allocation_size"),
            models.Index(fields=["created_at", "id"], name="allocation_created"),
        ]

    def __str__(self) -> str:
        return f"{self.number} {self.organization}: {self.instance_count} × {self.pool} ({self.starts_on} – {self.ends_on})"  # noqa: E501

    @property
    def days(self) -> int:
        return (self.ends_on - self.starts_on).days + 1

    @property
    def instance_hours(self) -> int:
        return self.instance_count * self.days * 24

    @property
    def ranks(self) -> int:
        """The training ranks it holds: a GPU each, or a NeuronCore each on Trainium (InstanceType)."""
        return self.instance_count * self.pool.instance_type.ranks_per_instance

    @property
    def can_extend(self) -> bool:
        """An extension starts the day after; there is none once the allocation runs to the pool's last day."""
        return self.ends_on < self.pool.ends_on


class AuditEvent(models.Model):
    """Append-only record of a decision or change: who, when, what, before → after. Account events have no org,
    nor do capacity plans' (a plan spans organizations)."""

    organization = models.ForeignKey(
        Organization, models.PROTECT, null=True, blank=True, related_name="audit_events", verbose_name=_("organization")
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("actor"),
    )
    action = models.CharField(_("action"), max_length=64)
    target_type = models.CharField(_("object type"), max_length=64)
    target_id = models.PositiveBigIntegerField(_("object id"))
    # {"field": [before, after]} for every field the action changed.
    changes = models.JSONField(_("changes"), default=dict, blank=True)
    comment = models.TextField(_("comment"), blank=True, max_length=FREE_TEXT_MAX)
    created_at = models.DateTimeField(_("at"), auto_now_add=True, db_index=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("audit event")
        verbose_name_plural = _("audit events")
        indexes = [models.Index(fields=["target_type", "target_id"])]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.actor} {self.action} {self.target_type}#{self.target_id}"

    @property
    def action_label(self) -> str:
        return str(audit_labels.ACTIONS.get(self.action, self.action))

    @property
    def target_label(self) -> str:
        """ "Capacity request R-14", in the reader's language; a type the app no longer has keeps its name."""
        model = audit_labels.target_model(self.target_type)
        return f"{capfirst(model._meta.verbose_name) if model else self.target_type} {audit_labels.number(self.target_type, self.target_id)}"  # noqa: E501

    @property
    def target_url(self) -> str:
        """Where the object is seen: a request's own page; an allocation on its organization's capacity page; any
        other type's page as its app registered it (tenants.audit_labels)."""
        if self.target_type == "capacityrequest":
            return reverse("capacity-request", args=[self.organization.slug, self.target_id])
        if self.target_type == "allocation":
            return reverse("capacity", args=[self.organization.slug]) + f"#allocation-{self.target_id}"
        page = audit_labels.PAGES.get(self.target_type)
        return reverse(page, args=[self.target_id]) if page else ""

    @property
    def change_rows(self) -> list[tuple[str, object, object]]:
        return audit_labels.change_rows(self.target_type, self.changes)


# Models of sub-packages, registered in this app (they do not import this module).
from tenants.capacity.models import CapacityPlan, PoolDay  # noqa: E402, F401
from tenants.logins.models import PasswordResetRequest  # noqa: E402, F401
from tenants.members.models import Invitation  # noqa: E402, F401
from tenants.scim.models import ScimGroup, ScimToken, ScimUser  # noqa: E402, F401
from tenants.service_accounts.models import ServiceAccount  # noqa: E402, F401
from tenants.tokens.models import ApiToken  # noqa: E402, F401
