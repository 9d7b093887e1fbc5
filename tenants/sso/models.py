"""The identity a person signs in with, and where a grant came from. Imported by tenants/models.py so Django
registers them in the tenants app; this module must not import tenants.models."""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class GrantSource(models.TextChoices):
    """Where a membership or a staff role came from: sign-in (tenants.sso) and provisioning (tenants.scim) each
    change and remove only their own."""

    LOCAL = "local", _("the portal")
    SSO = "sso", _("institution sign-in")
    SCIM = "scim", _("provisioning (SCIM)")


class OidcIdentity(models.Model):
    """One account at one provider: the issuer and the subject it gives the person, which never change, unlike an
    email address (changed, or reused for someone else). Sign-in finds the portal's user by these two alone."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oidc_identities", verbose_name=_("user")
    )
    issuer = models.CharField(_("issuer"), max_length=255)
    subject = models.CharField(_("subject"), max_length=255)
    email = models.EmailField(_("email at last sign-in"), blank=True)
    created_at = models.DateTimeField(_("first sign-in"), auto_now_add=True)
    last_login = models.DateTimeField(_("last sign-in"), null=True, blank=True)  # none yet: linked in admin

    class Meta:
        verbose_name = _("institution sign-in identity")
        verbose_name_plural = _("institution sign-in identities")
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="one_user_per_oidc_subject")]

    def __str__(self) -> str:
        return f"{self.subject} @ {self.issuer}"
