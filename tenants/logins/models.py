"""Requests for a password-reset email, kept for a day to limit how often one may ask. Imported at the end of
tenants/models.py so Django registers it in the tenants app."""

from django.db import models
from django.utils.translation import gettext_lazy as _


class PasswordResetRequest(models.Model):
    """One submission of the "forgot your password" form, whatever came of it."""

    class Outcome(models.TextChoices):
        SENT = "sent", _("email sent")
        NO_ACCOUNT = "no_account", _("no account that can reset its password")
        EMAIL_LIMIT = "email_limit", _("too many requests for this email address")
        LOCKED_OUT = "locked_out", _("account locked out after failed logins")
        ADDRESS_LIMIT = "address_limit", _("too many requests from this client address")

    email = models.EmailField(_("email address"), max_length=254)  # as asked for, lower-cased
    client_address = models.GenericIPAddressField(_("client address"), null=True, blank=True)
    outcome = models.CharField(_("outcome"), max_length=16, choices=Outcome.choices)
    requested_at = models.DateTimeField(_("requested at"), auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-requested_at"]
        verbose_name = _("password reset request")
        verbose_name_plural = _("password reset requests")
        indexes = [
            models.Index(fields=["email", "requested_at"]),
            models.Index(fields=["client_address", "requested_at"]),
        ]

    def __str__(self) -> str:
        return f"{self.requested_at:%Y-%m-%d %H:%M} {self.email} ({self.get_outcome_display()})"
