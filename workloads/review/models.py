"""The program team's weekly review: one meeting record per ISO week, and its action items."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from tenants.models import FREE_TEXT_MAX, Organization, StaffRole, TenantQuerySet
from workloads.support.models import SupportCase


class ReviewMeeting(models.Model):
    """The program team's weekly review: one per ISO week (Monday, in the program's timezone)."""

    # Always a Monday: portal.periods.week_of() normalizes every date it is given.
    week_start = models.DateField(_("week starting"), unique=True)
    attendees = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="review_meetings", verbose_name=_("attendees")
    )
    other_attendees = models.CharField(_("other attendees"), max_length=500, blank=True)
    minutes = models.TextField(_("minutes"), blank=True, max_length=FREE_TEXT_MAX)
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
        return self.all() if StaffRole.of(user) is not None else self.none()


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
