"""Creating, revoking and using API tokens. Each creation and revocation stays on the token's row (who, when,
where from) and is logged."""

import logging
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from tenants.tokens.keys import HashedKey
from tenants.tokens.models import ApiToken

logger = logging.getLogger("portal.tokens")

DEFAULT_DAYS = 90
MAX_DAYS = 365
EXPIRY_CHOICES = (7, 30, 90, 180, 365)  # days, as offered on the page; the API takes any 1..MAX_DAYS
MAX_ACTIVE_TOKENS = 100  # per user: a script that logs in on every run should keep its token instead
LAST_USED_PRECISION = timedelta(minutes=1)  # at most one write per token per minute, whatever the traffic


def default_name(now=None) -> str:
    return f"script {timezone.localtime(now or timezone.now()):%Y-%m-%d %H:%M}"


@transaction.atomic
def create_token(
    *, user, name: str, expires_in_days: int, via: str, address: str | None = None, created_by=None
) -> tuple[ApiToken, str]:
    """A new token and its key, which is shown once and never stored. `created_by`: who made it for `user` (a
    service account's admin); None when the owner made it."""
    if not 1 <= expires_in_days <= MAX_DAYS:
        raise ValidationError(
            {"expires_in_days": _("A token lasts 1 to %(max)d days.") % {"max": MAX_DAYS}}, code="expiry"
        )
    # Lock the user's row: two concurrent creations must not both pass the count.
    get_user_model().objects.select_for_update().filter(pk=user.pk).first()
    if ApiToken.objects.for_user(user).active().count() >= MAX_ACTIVE_TOKENS:
        raise ValidationError(
            _("You have %(count)d active tokens, the most allowed: revoke some on your API tokens page first.")
            % {"count": MAX_ACTIVE_TOKENS},
            code="too_many",
        )
    now = timezone.now()
    token, key = ApiToken.issue(
        user=user,
        name=name.strip() or default_name(now),
        created_at=now,
        expires_at=now + timedelta(days=expires_in_days),
        created_via=via,
        created_from=address,
        created_by=created_by,
    )
    token.save()
    logger.info(
        "API token created: id=%s prefix=%s user=%s via=%s address=%s expires=%s",
        token.pk,
        token.prefix,
        user.get_username(),
        via,
        address,
        token.expires_at.isoformat(),
    )
    return token, key


def revoke_token(*, token: ApiToken, by) -> ApiToken:
    """Revokes `token` (the owner, or staff in Django admin; None: the portal itself, when SCIM deactivates the
    account); revoking twice keeps the first record."""
    now = timezone.now()
    if ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=now, revoked_by=by):
        token.revoked_at, token.revoked_by = now, by
        logger.info(
            "API token revoked: id=%s prefix=%s user=%s by=%s",
            token.pk,
            token.prefix,
            token.user.get_username(),
            by.get_username() if by is not None else "provisioning (SCIM)",
        )
    else:
        token.refresh_from_db(fields=["revoked_at", "revoked_by"])
    return token


def note_use(token: HashedKey) -> None:
    """Records when the token (an API token, a cluster's reporter token) was last used, writing at most once a
    minute (a write per request would serialize every API call on SQLite's single writer)."""
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_PRECISION:
        type(token)._default_manager.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
