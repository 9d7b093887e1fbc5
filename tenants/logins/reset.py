"""Password reset by email for accounts with a local password, through the same limits as logins.

Django's own views and token do the work (the link names the account and carries a token that the new password,
a login or PASSWORD_RESET_TIMEOUT voids). This module decides whether an email goes out: never to an account
without a usable password (one that signs in through its institution), never while the account is locked out
after failed logins, and at most PASSWORD_RESET_EMAIL_LIMIT times an hour per email address. Whatever it decides,
the person sees the same page, so the form tells nobody whether an account exists. Only a client address that
asked too often (PASSWORD_RESET_ADDRESS_LIMIT an hour) or is locked out after failed logins is told so.
"""

from __future__ import annotations

import logging
import math
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from tenants.audit import record_audit
from tenants.logins.lockout import client_address, lockout_end
from tenants.logins.models import PasswordResetRequest

logger = logging.getLogger("portal.logins")

WINDOW = timedelta(hours=1)
KEPT = timedelta(days=1)
Outcome = PasswordResetRequest.Outcome
# Requests that went through the checks. Those refused for a limit do not count again, so asking on during a
# limit does not extend it.
COUNTED = [Outcome.SENT, Outcome.NO_ACCOUNT, Outcome.LOCKED_OUT]


def address_wait(request) -> int:
    """Seconds until this client address may ask again: 0 when it may now."""
    address = client_address(request)
    if address is None:
        return 0
    now = timezone.now()
    counted = PasswordResetRequest.objects.filter(
        client_address=address, requested_at__gte=now - WINDOW, outcome__in=COUNTED
    )
    if counted.count() < settings.PASSWORD_RESET_ADDRESS_LIMIT:
        return 0
    # A place frees up when the oldest request in the window leaves it.
    oldest = counted.order_by("requested_at").values_list("requested_at", flat=True).first()
    return max(1, math.ceil((oldest + WINDOW - now).total_seconds()))


def request_reset(*, request, form, **save_options) -> str:
    """Send the reset email of the account(s) with the form's email address if the rules allow; the outcome, for
    the record. `form` is a valid PasswordResetForm: its `get_users` already skips inactive accounts and those
    without a usable password; `save_options` go to its `save`."""
    email = form.cleaned_data["email"].strip().lower()
    address = client_address(request)
    now = timezone.now()
    PasswordResetRequest.objects.filter(requested_at__lt=now - KEPT).delete()
    if address_wait(request) or lockout_end(request, None) is not None:
        outcome = Outcome.ADDRESS_LIMIT
    else:
        asked = PasswordResetRequest.objects.filter(email=email, requested_at__gte=now - WINDOW, outcome__in=COUNTED)
        users = list(form.get_users(email))
        if asked.count() >= settings.PASSWORD_RESET_EMAIL_LIMIT:
            outcome = Outcome.EMAIL_LIMIT
        elif not users:
            outcome = Outcome.NO_ACCOUNT
        elif any(lockout_end(request, user.get_username()) is not None for user in users):
            outcome = Outcome.LOCKED_OUT
        else:
            outcome = Outcome.SENT
    PasswordResetRequest.objects.create(email=email, client_address=address, outcome=outcome)
    if outcome == Outcome.SENT:
        form.save(request=request, **save_options)
    logger.info("Password reset asked for %r from %s: %s", email, address, outcome)
    return outcome


def note_reset(*, user) -> None:
    """The audit trail's record of a password set through a reset link."""
    record_audit(
        actor=user,
        organization=None,
        action="account.password_reset",
        target=user,
        comment=user.get_username(),
    )
    logger.info("Password reset through an emailed link: username=%r", user.get_username())
