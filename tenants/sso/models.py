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
    issuer = models.CharField(_("issuer"), max_length=1024)  # an OpenID issuer, or a SAML IdP's entity id
    subject = models.CharField(_("subject"), max_length=1024)  # `sub`, or eduPersonPrincipalName / a NameID
    email = models.EmailField(_("email at last sign-in"), blank=True)
    # Whether the provider vouched for that address (email_verified, or a provider trusted for addresses): only a
    # verified address is kept on the account and matched with an invitation (tenants.members.services).
    email_verified = models.BooleanField(_("email verified by the provider"), default=False)
    created_at = models.DateTimeField(_("first sign-in"), auto_now_add=True)
    last_login = models.DateTimeField(_("last sign-in"), null=True, blank=True)  # none yet: linked in admin

    class Meta:
        verbose_name = _("institution sign-in identity")
        verbose_name_plural = _("institution sign-in identities")
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="one_user_per_oidc_subject")]

    def __str__(self) -> str:
        return f"{self.subject} @ {self.issuer}"


class SignInSession(models.Model):
    """A session someone signed in to, kept so that it can be ended from outside the browser: when their
    institution logs them out (back-channel logout names the provider's session id `sid`, or the person), or when
    they are deprovisioned or deactivated (every session of the user). Written at every sign-in, password ones too
    (tenants.sso.sessions), dropped at sign-out."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sign_in_sessions", verbose_name=_("user")
    )
    session_key = models.CharField(_("session"), max_length=40, unique=True)
    provider = models.CharField(_("provider"), max_length=40, blank=True)  # its key; blank: a password sign-in
    sid = models.CharField(_("provider's session id"), max_length=255, blank=True, db_index=True)
    created_at = models.DateTimeField(_("signed in"), auto_now_add=True)

    class Meta:
        verbose_name = _("signed-in session")
        verbose_name_plural = _("signed-in sessions")

    def __str__(self) -> str:
        return f"{self.user_id} {self.provider or 'password'} {self.created_at:%Y-%m-%d %H:%M}"
