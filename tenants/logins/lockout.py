"""How a lockout is answered and recorded, and which address a login comes from."""

from __future__ import annotations

import logging
import math
from datetime import datetime, timedelta

from axes.helpers import get_cool_off, get_failure_limit
from axes.models import AccessAttempt
from axes.signals import user_locked_out
from django.conf import settings
from django.db.models import Max, Sum
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.translation import ngettext

logger = logging.getLogger("portal.logins")


def client_address(request: HttpRequest) -> str | None:
    """The client's address (AXES_CLIENT_IP_CALLABLE). Behind TRUSTED_PROXY_COUNT proxies, the address the
    outermost of them saw, from X-Forwarded-For; without that setting the header is ignored, since a client
    can write anything there and so escape the per-address limit."""
    remote = request.META.get("REMOTE_ADDR")
    proxies = settings.TRUSTED_PROXY_COUNT
    if proxies <= 0:
        return remote
    # Each proxy appends the address it received the request from: the last `proxies` entries are theirs.
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    if len(forwarded) < proxies:
        return remote
    return forwarded[-proxies]


def is_locked_out(request) -> bool:
    """Whether the authenticate() just made on this request (Django's or DRF's) was refused by a lockout."""
    return bool(getattr(request, "axes_locked_out", False))


def lockout_end(request, username: str | None) -> datetime | None:
    """When the lockout of this account or of the request's client address ends; None if neither is locked out.
    A lockout lasts the cool-off from the failure that reached the limit (attempts during it are refused, not
    counted: AXES_RESET_COOL_OFF_ON_FAILURE_…)."""
    cool_off: timedelta = get_cool_off(request)
    now = timezone.now()
    limit = get_failure_limit(request, None)
    address = getattr(request, "axes_ip_address", None) or client_address(request)
    ends = []
    for lookup in ({"username": username}, {"ip_address": address}):
        if None in lookup.values():
            continue
        recent = AccessAttempt.objects.filter(**lookup, attempt_time__gte=now - cool_off).aggregate(
            failures=Sum("failures_since_start"), last=Max("attempt_time")
        )
        if (recent["failures"] or 0) >= limit:
            ends.append(recent["last"] + cool_off)
    return max(ends) if ends else None


def seconds_until_unlocked(request, username: str | None) -> int:
    """Until the lockout of this account or this address ends (the whole cool-off if neither is locked)."""
    end = lockout_end(request, username)
    if end is None:
        return int(get_cool_off(request).total_seconds())
    return max(1, math.ceil((end - timezone.now()).total_seconds()))


def lockout_message(seconds: int) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    return ngettext(
        "Too many failed logins for this account or from this address. Try again in %(minutes)d minute.",
        "Too many failed logins for this account or from this address. Try again in %(minutes)d minutes.",
        minutes,
    ) % {"minutes": minutes}


def lockout_response(request: HttpRequest, original_response: HttpResponse | None, credentials: dict | None):
    """AXES_LOCKOUT_CALLABLE, which AxesMiddleware calls for a locked-out request. The login page and the token
    endpoint answer a lockout themselves (429 with the form error, or JSON): their answer stands. Any other
    login form (Django admin's) gets a page saying so."""
    if original_response is not None and original_response.status_code == 429:
        return original_response
    username = (credentials or {}).get("username") or request.POST.get("username")
    seconds = seconds_until_unlocked(request, username)
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": lockout_message(seconds)}, status=429)
    else:
        response = render(request, "registration/locked_out.html", {"message": lockout_message(seconds)}, status=429)
    response["Retry-After"] = str(seconds)
    return response


@receiver(user_locked_out)
def log_lockout(sender, request, username: str | None, ip_address: str | None, **kwargs) -> None:
    """One warning per lockout (axes also stores it: AccessFailureLog with "locked out", in Django admin), then
    one line per attempt refused during it."""
    path = getattr(request, "path", "")
    if getattr(request, "axes_failures_since_start", None) is not None:  # this failure reached the limit
        logger.warning(
            "Login locked out after %s failed attempts: username=%r address=%s path=%s (for %s)",
            request.axes_failures_since_start,
            username,
            ip_address,
            path,
            get_cool_off(request),
        )
    else:
        logger.info("Login refused during a lockout: username=%r address=%s path=%s", username, ip_address, path)
