"""The API token model. Imported at the end of tenants/models.py so Django registers it in the tenants app;
it must not import tenants.models (that would be an import cycle)."""

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from tenants.tokens.keys import HashedKey


class ApiTokenQuerySet(models.QuerySet):
    def for_user(self, user) -> "ApiTokenQuerySet":
        return self.filter(user=user)

    def active(self) -> "ApiTokenQuerySet":
        return self.filter(revoked_at__isnull=True, expires_at__gt=timezone.now())


class ApiToken(HashedKey):
    """A user's named key for scripts. Never deleted: a revoked or expired row stays as the record of who
    created it (when, where from, on the page or through the API) and who revoked it, when."""

    KIND = "fmp"

    class Via(models.TextChoices):
        PAGE = "page", _("API tokens page")
        API = "api", _("API (username and password)")
        # A service account's, made by an admin of its organization (tenants.service_accounts).
        SERVICE_ACCOUNT_PAGE = "svc-page", _("Service account page")
        SERVICE_ACCOUNT_API = "svc-api", _("Service accounts API")

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens", verbose_name=_("user")
    )
    name = models.CharField(_("name"), max_length=100)
    created_via = models.CharField(_("created on"), max_length=8, choices=Via.choices, editable=False)
    created_from = models.GenericIPAddressField(_("created from"), null=True, blank=True, editable=False)
    # Who made it when not its owner: the admin who made a service account's token. Null for a person's own.
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        editable=False,
        db_index=False,  # never looked up by it; an index on this existing table would lock it while built
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

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("API token")
        verbose_name_plural = _("API tokens")

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"
