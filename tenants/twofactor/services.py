"""Setting up, checking and resetting a staff account's second factor."""

from __future__ import annotations

import logging
import math
import time
from base64 import b32encode
from binascii import unhexlify
from dataclasses import dataclass

import qrcode
import qrcode.image.svg
from django.conf import settings
from django.contrib.auth.signals import user_logged_in
from django.db import transaction
from django.dispatch import receiver
from django.utils import timezone
from django_otp.models import Device
from django_otp.oath import TOTP
from django_otp.plugins.otp_static.models import StaticDevice, StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice
from django_otp.util import random_hex

from tenants.access import is_program_staff
from tenants.audit import record_audit

logger = logging.getLogger("portal.logins")

RECOVERY_CODES = 10
# In the session: this login owes a code (the account has a second factor); the key of an app being set up.
SESSION_OWES = "second_factor_owed"
SESSION_SETUP_KEY = "second_factor_setup_key"


def is_staff_account(user) -> bool:
    """Accounts with access beyond one organization: program staff, Django staff, superusers."""
    return user.is_authenticated and (user.is_superuser or user.is_staff or is_program_staff(user))


def has_second_factor(user) -> bool:
    return TOTPDevice.objects.filter(user=user, confirmed=True).exists()


def requires_second_factor(user) -> bool:
    """Whether this account must pass a second factor to sign in (a password alone is not enough)."""
    return (settings.STAFF_REQUIRE_2FA and is_staff_account(user)) or has_second_factor(user)


def owes_second_factor(request) -> bool:
    """Whether this session must pass its second factor before any page or API call works. No query unless
    STAFF_REQUIRE_2FA is on (then the staff role, which the pages read anyway)."""
    user = request.user
    if not user.is_authenticated or getattr(user, "is_verified", bool)():  # is_verified: django-otp's middleware
        return False
    if request.session.get(SESSION_OWES):
        return True
    return settings.STAFF_REQUIRE_2FA and is_staff_account(user)


@receiver(user_logged_in)
def note_owed_factor(sender, request, user, **kwargs) -> None:
    """Every login (the login page, Django admin's, single sign-on) of an account with a second factor owes it."""
    if request is not None and hasattr(request, "session") and has_second_factor(user):
        request.session[SESSION_OWES] = True


# --- Setting up ------------------------------------------------------------------------------------------


def new_setup_key() -> str:
    return random_hex(20)


def setup_uri(*, user, key: str) -> str:
    """The otpauth:// address an authenticator app reads from the QR code."""
    return TOTPDevice(user=user, key=key).config_url


def setup_secret(key: str) -> str:
    """The key as authenticator apps take it typed in: base32, in groups of four."""
    text = b32encode(unhexlify(key)).decode()
    return " ".join(text[i : i + 4] for i in range(0, len(text), 4))


def qr_svg(uri: str) -> str:
    """The QR code of `uri` as inline SVG (the qrcode library; no image library needed)."""
    image = qrcode.make(uri, image_factory=qrcode.image.svg.SvgPathImage, box_size=8, border=2)
    return image.to_string(encoding="unicode")


@transaction.atomic
def enrol(*, user, key: str, code: str) -> tuple[TOTPDevice, list[str]] | None:
    """Add the authenticator app whose key the person was shown, if `code` is its current code; with it, new
    recovery codes. None when the code is wrong. An account that has an app already keeps it: replacing one takes
    a reset by a program manager (or its own recovery code, then a reset)."""
    if TOTPDevice.objects.select_for_update().filter(user=user, confirmed=True).exists():
        return None
    totp = TOTP(unhexlify(key))
    totp.time = time.time()
    if not code.isdigit() or not totp.verify(int(code), tolerance=1):
        return None
    TOTPDevice.objects.filter(user=user).delete()  # unconfirmed leftovers (Django admin's)
    device = TOTPDevice.objects.create(user=user, name="Authenticator app", key=key, confirmed=True, last_t=totp.t())
    codes = _new_recovery_codes(user)
    record_audit(
        actor=user, organization=None, action="account.two_factor_enabled", target=user, comment=user.get_username()
    )
    logger.info("Second factor set up: username=%r", user.get_username())
    return device, codes


@transaction.atomic
def replace_recovery_codes(*, user) -> list[str]:
    """New recovery codes; the old ones stop working."""
    codes = _new_recovery_codes(user)
    record_audit(
        actor=user, organization=None, action="account.recovery_codes", target=user, comment=user.get_username()
    )
    return codes


def _new_recovery_codes(user) -> list[str]:
    device, _ = StaticDevice.objects.get_or_create(user=user, defaults={"name": "Recovery codes", "confirmed": True})
    device.token_set.all().delete()
    codes = [StaticToken.random_token() for _ in range(RECOVERY_CODES)]
    StaticToken.objects.bulk_create(StaticToken(device=device, token=code) for code in codes)
    return codes


def recovery_codes_left(user) -> int:
    return StaticToken.objects.filter(device__user=user, device__confirmed=True).count()


# --- Checking ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    device: Device | None  # the device that accepted the code
    wait: int = 0  # seconds until another try is allowed, after too many wrong codes
    recovery_codes_left: int | None = None  # when a recovery code was used


@transaction.atomic
def check_code(*, user, code: str) -> Check:
    """Check a code from the app (six digits) or a recovery code. Wrong codes in a row make the next try wait
    1, 2, 4 … seconds (django-otp's throttling), counted across the app and the recovery codes alike."""
    code = "".join(code.split()).lower()
    devices = [
        *TOTPDevice.objects.select_for_update().filter(user=user, confirmed=True),
        *StaticDevice.objects.select_for_update().filter(user=user, confirmed=True),
    ]
    waits = [_wait(device) for device in devices]
    if any(waits):
        return Check(device=None, wait=max(waits))
    is_app_code = code.isdigit() and len(code) == 6
    for device in devices:
        if isinstance(device, TOTPDevice) == is_app_code and device.verify_token(code):
            for other in devices:
                if other is not device and other.throttling_failure_count:
                    other.throttle_reset()
            left = recovery_codes_left(user) if isinstance(device, StaticDevice) else None
            return Check(device=device, recovery_codes_left=left)
    # A wrong code: every device of the account counts it (verify_token already counted the one it tried).
    for device in devices:
        if isinstance(device, TOTPDevice) != is_app_code:
            device.throttle_increment()
    logger.warning("Wrong second-factor code: username=%r", user.get_username())
    return Check(device=None)


def _wait(device) -> int:
    allowed, info = device.verify_is_allowed()
    if allowed or not info or not info.get("locked_until"):
        return 0
    return max(1, math.ceil((info["locked_until"] - timezone.now()).total_seconds()))


# --- Resetting ---------------------------------------------------------------------------------------------


@transaction.atomic
def reset_second_factor(*, user, by) -> None:
    """Remove the account's app and recovery codes (a lost phone). Its sessions that passed with them pass no more;
    with STAFF_REQUIRE_2FA it sets up a new app on its next page."""
    TOTPDevice.objects.filter(user=user).delete()
    StaticDevice.objects.filter(user=user).delete()
    record_audit(
        actor=by, organization=None, action="account.two_factor_reset", target=user, comment=user.get_username()
    )
    logger.warning("Second factor reset: username=%r by=%r", user.get_username(), by.get_username())
