"""Support cases and their append-only, chronological history (CaseEvent).

Writes go through workloads.support.services; email goes out from workloads.support.notifications.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from tenants.access import can_read_internal_notes
from tenants.models import FREE_TEXT_MAX, Organization, TenantQuerySet
from workloads.records.models import Workload
from workloads.support.written import for_reader


class SupportCaseQuerySet(TenantQuerySet):
    def active(self) -> SupportCaseQuerySet:
        return self.filter(status__in=SupportCase.ACTIVE_STATUSES)


class SupportCase(models.Model):
    """A tenant's support case. Its history is CaseEvent, written only by workloads.support.services."""

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
    # The portal's own title in each language when the portal opened the case ({"en": …, "ja": …}); see written.py.
    title_written = models.JSONField(
        _("title in each language"), default=dict, db_default={}, blank=True, editable=False
    )
    description = models.TextField(_("description"), max_length=FREE_TEXT_MAX)
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
    cluster = models.ForeignKey(
        "workloads.Cluster",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="support_cases",
        verbose_name=_("cluster"),
    )
    # One instance of that cluster, when the case is about a node (a failing GPU, an unreachable host).
    node = models.ForeignKey(
        "workloads.ClusterNode",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="support_cases",
        verbose_name=_("node"),
    )
    # None: the portal itself opened it (a health incident, a failed validation), not a person.
    opened_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("opened by"),
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
        indexes = [
            models.Index(fields=["organization", "status"]),
            # The landing page's open S1/S2 cases, most severe and oldest first (the condition: ACTIVE_STATUSES)
            models.Index(
                fields=["severity", "created_at", "id"],
                condition=Q(status__in=("open", "in_progress", "waiting_on_tenant")),
                name="case_active_severity",
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(node__isnull=True) | models.Q(cluster__isnull=False), name="case_node_has_cluster"
            )
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.title}"

    @property
    def shown_title(self) -> str:
        """The title in the reader's language when the portal wrote it (see written.py), else as stored."""
        return for_reader(self.title, self.title_written)

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

    def readable_by(self, user) -> CaseEventQuerySet:
        """The entries `user` may read: the org's (visible_to), without internal notes unless the reader is
        program staff. Pages, API and anything else that shows a case's history read it through here."""
        events = self.visible_to(user)
        return events if can_read_internal_notes(user) else events.public()


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
    body = models.TextField(_("text"), blank=True, max_length=FREE_TEXT_MAX)
    # The portal's own text in each language when the portal wrote it ({"en": …, "ja": …}); see written.py.
    body_written = models.JSONField(_("text in each language"), default=dict, db_default={}, blank=True, editable=False)
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

    @property
    def shown_body(self) -> str:
        """The text in the reader's language when the portal wrote it (see written.py), else as stored."""
        return for_reader(self.body, self.body_written)

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
