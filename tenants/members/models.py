"""Invitations to join an organization. Imported at the end of tenants/models.py so Django registers the model in
the tenants app; it must not import tenants.models (an import cycle): related models are named by string, and
scoping mirrors tenants.models.TenantQuerySet."""

from django.apps import apps
from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from tenants.tokens.keys import HashedKey


class InvitationQuerySet(models.QuerySet):
    """Scoped like every tenant row (tenants.models.TenantQuerySet): program staff see all, a tenant its orgs'."""

    def for_org(self, org) -> "InvitationQuerySet":
        return self.filter(organization=org)

    def visible_to(self, user) -> "InvitationQuerySet":
        if not user.is_authenticated:
            return self.none()
        if hasattr(user, "staff_role"):  # program staff see every organization's
            return self.all()
        return self.filter(organization__memberships__user=user)

    def pending(self) -> "InvitationQuerySet":
        return self.filter(accepted_at__isnull=True, revoked_at__isnull=True, expires_at__gt=timezone.now())


class Invitation(HashedKey):
    """A single-use link to join an organization with a role, sent to one email address. The link's key is
    stored hashed (tenants.tokens.keys); the row stays, accepted, revoked or expired, as the record of who
    invited whom and who accepted."""

    KIND = "inv"

    organization = models.ForeignKey(
        "tenants.Organization", on_delete=models.CASCADE, related_name="invitations", verbose_name=_("organization")
    )
    email = models.EmailField(_("email"))
    role = models.CharField(_("role"), max_length=16)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("invited by"),
    )
    accepted_at = models.DateTimeField(_("accepted"), null=True, blank=True, editable=False)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        editable=False,
        verbose_name=_("accepted by"),
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

    objects = InvitationQuerySet.as_manager()

    STATE_LABELS = {**HashedKey.STATE_LABELS, "accepted": _("accepted")}

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("invitation")
        verbose_name_plural = _("invitations")

    def __str__(self) -> str:
        return f"{self.email} → {self.organization_id} ({self.role})"

    @property
    def state(self) -> str:
        """ "active" (pending), "accepted", "revoked" or "expired"."""
        if self.accepted_at is not None:
            return "accepted"
        return super().state

    def get_role_display(self) -> str:
        roles = apps.get_model("tenants", "Membership").Role
        return str(dict(roles.choices).get(self.role, self.role))
