"""SCIM clients' bearer tokens: made by program staff (`manage.py scim_token create`), revoked there or in Django
admin, each creation and revocation on the token's row, in the audit trail (no organization's: program staff read
it) and in the log. SCIM answers only once a token was ever made: a portal that does not use SCIM shows no
endpoint (404)."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from tenants.audit import record_audit
from tenants.scim.models import ScimToken
from tenants.tokens.services import note_use

logger = logging.getLogger("portal.scim")

DEFAULT_DAYS = 365
MAX_DAYS = 730  # an identity system's credential is renewed by a person: once a year, with a year's grace


def enabled() -> bool:
    return ScimToken.objects.exists()


@transaction.atomic
def issue_token(*, name: str, expires_in_days: int = DEFAULT_DAYS, by=None) -> tuple[ScimToken, str]:
    """A new token and its key, shown once and never stored."""
    if not name.strip():
        raise ValidationError({"name": _("Name the SCIM client the token is for.")}, code="name")
    if not 1 <= expires_in_days <= MAX_DAYS:
        raise ValidationError(
            {"expires_in_days": _("A SCIM token lasts 1 to %(max)d days.") % {"max": MAX_DAYS}}, code="expiry"
        )
    now = timezone.now()
    token, key = ScimToken.issue(
        name=name.strip()[:100], created_by=by, created_at=now, expires_at=now + timedelta(days=expires_in_days)
    )
    token.save()
    record_audit(actor=by, organization=None, action="scim.token_created", target=token,
                 changes={"expires_at": (None, token.expires_at.isoformat())}, comment=token.name)  # fmt: skip
    logger.info("SCIM token created: id=%s prefix=%s name=%r expires=%s", token.pk, token.prefix, token.name,
                token.expires_at.isoformat())  # fmt: skip
    return token, key


@transaction.atomic
def revoke_token(*, token: ScimToken, by=None) -> ScimToken:
    """Revokes `token`: it stops working at once. Revoking twice keeps the first record."""
    now = timezone.now()
    if ScimToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=now, revoked_by=by):
        token.revoked_at, token.revoked_by = now, by
        record_audit(actor=by, organization=None, action="scim.token_revoked", target=token, comment=token.name)
        logger.info("SCIM token revoked: id=%s prefix=%s name=%r", token.pk, token.prefix, token.name)
    else:
        token.refresh_from_db(fields=["revoked_at", "revoked_by"])
    return token


def authenticate(key: str) -> tuple[ScimToken | None, str]:
    """The active token for `key`, or None and why not (for the client: the 401's detail)."""
    token = ScimToken.find(key)
    if token is None:
        return None, _("Invalid SCIM token.")
    if token.revoked_at is not None:
        return None, _("This SCIM token was revoked.")
    if token.is_expired():
        return None, _("This SCIM token has expired: ask the program team for a new one.")
    note_use(token)
    return token, ""
