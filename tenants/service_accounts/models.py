"""The service account model. Imported at the end of tenants/models.py so Django registers it in the tenants app; it
must not import tenants.models (an import cycle): related models are named by string, and scoping mirrors
tenants.models.TenantQuerySet."""

from __future__ import annotations

from django.apps import apps
from django.conf import settings
from django.db import models
from django.db.models import Count, OuterRef, Q, Subquery
from django.db.models.functions import Lower
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

# Usernames starting so are service accounts' (svc-<org slug>-<name>): people's accounts never get one (tenants.sso,
# the invitation's account form), so a person can never be mistaken for a machine or take a machine's name.
USERNAME_PREFIX = "svc-"
NAME_MAX = 60
DESCRIPTION_MAX = 1000


def is_service_account(user) -> bool:
    """Whether `user` is a service account's user. Free when the row was fetched with the user (token sign-in
    selects it); one query otherwise, cached on the user object."""
    return getattr(user, "pk", None) is not None and hasattr(user, "service_account")


class ServiceAccountQuerySet(models.QuerySet):
    """Scoped like every tenant row (tenants.models.TenantQuerySet): program staff see all, a tenant its orgs'."""

    def for_org(self, org) -> ServiceAccountQuerySet:
        return self.filter(organization=org)

    def visible_to(self, user) -> ServiceAccountQuerySet:
        if not user.is_authenticated:
            return self.none()
        if hasattr(user, "staff_role"):  # program staff see every organization's
            return self.all()
        return self.filter(organization__memberships__user=user)

    def enabled(self) -> ServiceAccountQuerySet:
        return self.filter(disabled_at__isnull=True)

    def with_details(self) -> ServiceAccountQuerySet:
        """Each with `role` (its membership's, None if someone removed it in Django admin) and `active_tokens`,
        in the same query, and the people named on the pages."""
        memberships = apps.get_model("tenants", "Membership").objects.filter(
            user=OuterRef("user_id"), organization=OuterRef("organization_id")
        )
        active = Q(user__api_tokens__revoked_at__isnull=True, user__api_tokens__expires_at__gt=timezone.now())
        return self.select_related("user", "organization", "created_by", "disabled_by").annotate(
            role=Subquery(memberships.values("role")[:1]),
            active_tokens=Count("user__api_tokens", filter=active),
        )


class ServiceAccount(models.Model):
    """A machine user of one organization. Never deleted: a disabled one stays, with its revoked tokens, as the
    record of who made it, what it did (the audit trail names its user) and who disabled it."""

    organization = models.ForeignKey(
        "tenants.Organization",
        on_delete=models.PROTECT,
        related_name="service_accounts",
        verbose_name=_("organization"),
    )
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="service_account",
        editable=False,
        verbose_name=_("user"),
    )
    name = models.CharField(_("name"), max_length=NAME_MAX)
    description = models.TextField(_("description"), blank=True, max_length=DESCRIPTION_MAX)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        editable=False,
        verbose_name=_("created by"),
    )
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    disabled_at = models.DateTimeField(_("disabled"), null=True, blank=True, editable=False)
    disabled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        editable=False,
        verbose_name=_("disabled by"),
    )

    objects = ServiceAccountQuerySet.as_manager()

    STATE_LABELS = {"active": _("active"), "disabled": _("disabled")}

    class Meta:
        ordering = ["organization__name", "name"]
        verbose_name = _("service account")
        verbose_name_plural = _("service accounts")
        constraints = [
            models.UniqueConstraint(Lower("name"), "organization", name="service_account_name_unique_per_org"),
        ]

    def __str__(self) -> str:
        return self.user.get_username()

    @property
    def username(self) -> str:
        return self.user.get_username()

    def get_role_display(self) -> str:
        roles = dict(apps.get_model("tenants", "Membership").Role.choices)
        role = getattr(self, "role", None)
        return str(roles.get(role, role or "—"))

    @property
    def is_disabled(self) -> bool:
        return self.disabled_at is not None

    @property
    def state(self) -> str:
        """ "active" or "disabled" (a code: for the API and CSS)."""
        return "disabled" if self.is_disabled else "active"

    @property
    def state_label(self) -> str:
        return str(self.STATE_LABELS[self.state])


def people(memberships):
    """People's memberships among these: a service account's is managed on its own page, not among the members."""
    return memberships.filter(user__service_account__isnull=True)
