"""SCIM's rows: the clients' bearer tokens, and the people and groups a client provisioned. Imported at the end of
tenants/models.py so Django registers them in the tenants app; this module must not import tenants.models."""

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from tenants.tokens.keys import HashedKey


class ScimTokenQuerySet(models.QuerySet):
    def active(self) -> "ScimTokenQuerySet":
        return self.filter(revoked_at__isnull=True, expires_at__gt=timezone.now())


class ScimToken(HashedKey):
    """A SCIM client's key (an institution's identity system), made by program staff with `manage.py scim_token`.
    It acts for no person: it may create, change and deactivate any account SCIM manages. Never deleted: a revoked
    or expired row stays as the record of who made it and who revoked it."""

    KIND = "scim"

    name = models.CharField(_("name"), max_length=100)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        editable=False,
        verbose_name=_("created by"),
    )
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        editable=False,
        verbose_name=_("revoked by"),
    )

    objects = ScimTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("SCIM token")
        verbose_name_plural = _("SCIM tokens")

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"


class ScimUser(models.Model):
    """A portal account that a SCIM client provisioned or took over: its SCIM id (never the database's), the
    client's own id for the person (externalId) and what SCIM knows that the user row does not keep."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="scim", verbose_name=_("user")
    )
    scim_id = models.UUIDField(_("SCIM id"), default=uuid.uuid4, unique=True, editable=False)
    external_id = models.CharField(_("external id"), max_length=255, blank=True, db_index=True)
    display_name = models.CharField(_("display name"), max_length=255, blank=True)
    # Every address SCIM sent ([{"value", "type", "primary"}]); the user's email is the primary one.
    emails = models.JSONField(_("email addresses"), default=list, blank=True)
    created_at = models.DateTimeField(_("created"), default=timezone.now, editable=False)
    updated_at = models.DateTimeField(_("updated"), default=timezone.now, editable=False)

    class Meta:
        verbose_name = _("SCIM user")
        verbose_name_plural = _("SCIM users")

    def __str__(self) -> str:
        return f"{self.user} ({self.scim_id})"


class ScimGroup(models.Model):
    """A group a SCIM client pushed. One whose name reads `<prefix>:<org-slug>:<role>` or `<prefix>:staff:<role>`
    (tenants.sso.mapping) grants that to its members; any other is kept, since the client expects it to exist,
    and grants nothing."""

    scim_id = models.UUIDField(_("SCIM id"), default=uuid.uuid4, unique=True, editable=False)
    display_name = models.CharField(_("name"), max_length=255)
    external_id = models.CharField(_("external id"), max_length=255, blank=True, db_index=True)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, related_name="scim_groups", blank=True, verbose_name=_("members")
    )
    created_at = models.DateTimeField(_("created"), default=timezone.now, editable=False)
    updated_at = models.DateTimeField(_("updated"), default=timezone.now, editable=False)

    class Meta:
        ordering = ["display_name", "pk"]
        verbose_name = _("SCIM group")
        verbose_name_plural = _("SCIM groups")

    def __str__(self) -> str:
        return self.display_name
