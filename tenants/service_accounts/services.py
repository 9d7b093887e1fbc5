"""Creating, changing, disabling and enabling service accounts, and their tokens. Pages and API both call these; each
checks who acts through tenants.access (`can_manage_service_accounts`: the org's admins and program staff, never a
service account), refuses bad input with a ValidationError naming the field, and records every change in the audit
trail of the account's organization.

Tokens are tenants.tokens' (ApiToken, its hashed key, expiry and revocation): a service account's token is its
user's token, so tenants.tokens.authentication and tenants.access treat it like anyone's, with the account's one
membership deciding what it may do.
"""

from __future__ import annotations

import logging
import re

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from tenants.access import OrgAccess, get_org_access_or_404
from tenants.audit import record_audit
from tenants.models import Membership, Organization
from tenants.service_accounts.models import (
    DESCRIPTION_MAX,
    NAME_MAX,
    USERNAME_PREFIX,
    ServiceAccount,
    is_service_account,
)
from tenants.tokens import services as tokens
from tenants.tokens.models import ApiToken

logger = logging.getLogger("portal.service_accounts")

# Member or viewer: an admin manages people and machines, which a machine never does.
ROLES = {Membership.Role.MEMBER: Membership.Role.MEMBER.label, Membership.Role.VIEWER: Membership.Role.VIEWER.label}
NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$", re.IGNORECASE)


def managing_access(user, organization: Organization) -> OrgAccess:
    """The caller's access to the org if it may manage its service accounts (403 otherwise, 404 if not its org)."""
    access = get_org_access_or_404(user, organization.slug)
    access.require(
        access.can_manage_service_accounts and not is_service_account(user),
        _("Only the organization's admins manage its service accounts."),
    )
    return access


def clean_role(role: str) -> str:
    if role == Membership.Role.ADMIN:
        raise ValidationError(
            {
                "role": _(
                    "A service account cannot be admin: it never manages members or service accounts. "
                    "Choose member or viewer."
                )
            },
            code="admin",
        )
    if role not in ROLES:
        raise ValidationError(
            {"role": _("No such role: %(role)s. Choose member or viewer.") % {"role": role}}, code="role"
        )
    return role


def username_for(organization: Organization, name: str) -> str:
    return f"{USERNAME_PREFIX}{organization.slug}-{name.lower()}"


def clean_name(organization: Organization, name: str) -> str:
    name = (name or "").strip()
    if not name:
        raise ValidationError({"name": _("Give the service account a name.")}, code="required")
    if len(name) > NAME_MAX or not NAME.match(name):
        raise ValidationError(
            {
                "name": _(
                    "Use up to %(max)d letters, digits and hyphens, starting and ending with a letter or digit, "
                    "e.g. nightly-eval."
                )
                % {"max": NAME_MAX}
            },
            code="name",
        )
    if ServiceAccount.objects.for_org(organization).filter(name__iexact=name).exists():
        raise ValidationError(
            {"name": _("This organization already has a service account named %(name)s.") % {"name": name}},
            code="duplicate",
        )
    username = username_for(organization, name)
    if get_user_model().objects.filter(username__iexact=username).exists():
        raise ValidationError(
            {"name": _("The username %(username)s is taken by another account: choose another name.")
             % {"username": username}},
            code="username_taken",
        )  # fmt: skip
    return name


def clean_description(description: str) -> str:
    description = (description or "").strip()
    if len(description) > DESCRIPTION_MAX:
        raise ValidationError(
            {"description": _("At most %(max)d characters.") % {"max": DESCRIPTION_MAX}}, code="max_length"
        )
    return description


@transaction.atomic
def create_service_account(
    *, user, organization: Organization, name: str, role: str, description: str = ""
) -> ServiceAccount:
    managing_access(user, organization)
    # Lock the organization's row: two admins creating the same name at once make one account.
    Organization.objects.select_for_update().filter(pk=organization.pk).first()
    errors = {}
    checks = (lambda: clean_name(organization, name), lambda: clean_role(role), lambda: clean_description(description))
    for check in checks:
        try:
            check()
        except ValidationError as error:
            errors |= error.message_dict
    if errors:
        raise ValidationError(errors)
    name = name.strip()
    users = get_user_model()
    try:
        with transaction.atomic():
            machine = users(username=username_for(organization, name), first_name=name[:150])
            machine.set_unusable_password()  # never signs in: it acts through its API tokens
            machine.save()
    except IntegrityError:  # the same username made by someone else meanwhile
        raise ValidationError({"name": _("This name is taken: choose another.")}, code="username_taken") from None
    account = ServiceAccount.objects.create(
        organization=organization, user=machine, name=name, description=description.strip(), created_by=user
    )
    Membership.objects.create(user=machine, organization=organization, role=role)
    record_audit(
        actor=user,
        organization=organization,
        action="service_account.created",
        target=account,
        changes={"name": (None, name), "role": (None, role)},
        comment=machine.get_username(),
    )
    logger.info("Service account %s created in %s by %s", machine.get_username(), organization.slug, user)
    return detailed(account)


def detailed(account: ServiceAccount) -> ServiceAccount:
    """The account again, with its role and active tokens count (ServiceAccountQuerySet.with_details)."""
    return ServiceAccount.objects.with_details().get(pk=account.pk)


def _locked(account: ServiceAccount) -> ServiceAccount:
    return ServiceAccount.objects.select_for_update().select_related("user", "organization").get(pk=account.pk)


@transaction.atomic
def change_service_account(
    *, user, account: ServiceAccount, role: str | None = None, description: str | None = None
) -> ServiceAccount:
    """A new role (member or viewer) or description; what changed goes to the audit trail. The role takes effect
    on the account's next request, as a person's does."""
    managing_access(user, account.organization)
    account = _locked(account)
    changes = {}
    if role is not None:
        clean_role(role)
        membership = Membership.objects.select_for_update().filter(user=account.user, organization=account.organization)
        membership = membership.first()
        before = membership.role if membership else None
        if before != role:
            if membership is None:  # removed in Django admin: the account gets its place back
                Membership.objects.create(user=account.user, organization=account.organization, role=role)
            else:
                membership.role = role
                membership.save(update_fields=["role"])
            changes["role"] = (before, role)
    if description is not None and clean_description(description) != account.description:
        changes["description"] = (account.description, clean_description(description))
        account.description = clean_description(description)
        account.save(update_fields=["description"])
    if changes:
        record_audit(
            actor=user,
            organization=account.organization,
            action="service_account.changed",
            target=account,
            changes=changes,
            comment=account.user.get_username(),
        )
    return detailed(account)


@transaction.atomic
def disable_service_account(*, user, account: ServiceAccount) -> ServiceAccount:
    """Revokes every token of the account at once and deactivates its user: its next request is a 401. The account,
    its membership and its tokens stay, as the record. Disabling twice keeps the first record."""
    managing_access(user, account.organization)
    account = _locked(account)
    if account.is_disabled:
        return detailed(account)
    revoked = 0
    for token in ApiToken.objects.for_user(account.user).filter(revoked_at__isnull=True):
        tokens.revoke_token(token=token, by=user)
        revoked += 1
    get_user_model().objects.filter(pk=account.user_id).update(is_active=False)
    account.disabled_at, account.disabled_by = timezone.now(), user
    account.save(update_fields=["disabled_at", "disabled_by"])
    record_audit(
        actor=user,
        organization=account.organization,
        action="service_account.disabled",
        target=account,
        changes={"disabled_at": (None, account.disabled_at), "tokens_revoked": (0, revoked)},
        comment=account.user.get_username(),
    )
    logger.info("Service account %s disabled by %s: %d tokens revoked", account.user.get_username(), user, revoked)
    return detailed(account)


@transaction.atomic
def enable_service_account(*, user, account: ServiceAccount) -> ServiceAccount:
    """Lets the account authenticate again, with new tokens only: the ones revoked when it was disabled stay so."""
    managing_access(user, account.organization)
    account = _locked(account)
    if not account.is_disabled:
        return detailed(account)
    before = account.disabled_at
    get_user_model().objects.filter(pk=account.user_id).update(is_active=True)
    account.disabled_at, account.disabled_by = None, None
    account.save(update_fields=["disabled_at", "disabled_by"])
    record_audit(
        actor=user,
        organization=account.organization,
        action="service_account.enabled",
        target=account,
        changes={"disabled_at": (before, None)},
        comment=account.user.get_username(),
    )
    return detailed(account)


@transaction.atomic
def create_token(
    *, user, account: ServiceAccount, name: str, expires_in_days: int, via: str, address: str | None = None
) -> tuple[ApiToken, str]:
    """A new token of the account and its key, shown once and never stored; within tenants.tokens' rules (1 to
    MAX_DAYS days, at most MAX_ACTIVE_TOKENS active)."""
    managing_access(user, account.organization)
    account = _locked(account)
    if account.is_disabled:
        raise ValidationError(
            _("This service account is disabled: enable it before creating a token."), code="disabled"
        )
    if ApiToken.objects.for_user(account.user).active().count() >= tokens.MAX_ACTIVE_TOKENS:
        raise ValidationError(
            _("This service account has %(count)d active tokens, the most allowed: revoke some first.")
            % {"count": tokens.MAX_ACTIVE_TOKENS},
            code="too_many",
        )
    token, key = tokens.create_token(
        user=account.user,
        name=name,
        expires_in_days=expires_in_days,
        via=via,
        address=address,
        created_by=user,
    )
    record_audit(
        actor=user,
        organization=account.organization,
        action="service_account.token_created",
        target=token,
        changes={"name": (None, token.name), "expires_at": (None, token.expires_at)},
        comment=account.user.get_username(),
    )
    return token, key


@transaction.atomic
def revoke_token(*, user, account: ServiceAccount, token: ApiToken) -> ApiToken:
    """Revokes one of the account's tokens: it stops working at once. Revoking twice keeps the first record."""
    managing_access(user, account.organization)
    if token.user_id != account.user_id:  # callers look the token up among the account's; this keeps it so
        raise ValidationError(_("This token is not the service account's."), code="not_its_token")
    already = ApiToken.objects.select_for_update().get(pk=token.pk).revoked_at is not None
    token = tokens.revoke_token(token=token, by=user)
    if not already:
        record_audit(
            actor=user,
            organization=account.organization,
            action="service_account.token_revoked",
            target=token,
            changes={"revoked_at": (None, token.revoked_at)},
            comment=account.user.get_username(),
        )
    return token


def tokens_of(account: ServiceAccount):
    """The account's tokens, revoked and expired ones included, newest first."""
    return ApiToken.objects.for_user(account.user).select_related("created_by", "revoked_by")
