"""OpenID Connect Back-Channel Logout 1.0: a provider that ends a person's session there (they signed out, or
their institution disabled them) posts a logout token here, and the portal ends the matching sessions at once.

The token is verified as an ID token is (tenants.sso.backend: the provider's keys, its issuer, our client as the
audience, `exp`, an `iat` of the last MAX_AGE_SECONDS) and as the specification adds (2.6): the back-channel logout
event, a `sub` or a `sid`, no `nonce`, and used once (its `jti`). It names the provider's session (`sid`: the
portal sessions signed in through it) or the person (`sub`: all their sessions signed in through that provider).
Answers 200, or 400 with an OAuth error, never a page.
"""

from __future__ import annotations

import hashlib
import logging
import time

import jwt
from django.conf import settings
from django.core.cache import cache
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from tenants.sso import provider as discovery
from tenants.sso import providers, services, sessions
from tenants.sso.backend import OidcBackend
from tenants.sso.models import OidcIdentity, SignInSession

logger = logging.getLogger("portal.sso")

EVENT = "http://schemas.openid.net/event/backchannel-logout"
MAX_AGE_SECONDS = 600  # a logout token older than this is refused, whatever its exp


class LogoutTokenRefused(Exception):
    pass


def verify(token: str) -> tuple[providers.Provider, dict]:
    try:
        issuer = jwt.decode(token, options={"verify_signature": False}).get("iss", "")
    except jwt.InvalidTokenError as error:
        raise LogoutTokenRefused(f"unreadable: {error}") from error
    found = providers.by_issuer(str(issuer))
    if found is None or found.protocol != "oidc":
        raise LogoutTokenRefused(f"issuer {issuer!r} is no provider of ours")
    with providers.using(found):
        try:
            candidates = OidcBackend().retrieve_matching_jwk(token)
        except services.SignInRefused as error:
            raise LogoutTokenRefused(error.reason) from error
        for key in candidates:
            try:
                claims = jwt.decode(
                    token,
                    key,
                    algorithms=[found.sign_algorithm],
                    audience=found.client_id,
                    issuer=discovery.metadata(found).issuer,
                    leeway=settings.OIDC_CLOCK_SKEW_SECONDS,
                    options={"require": ["iss", "aud", "iat", "exp", "jti"]},
                )
                break
            except jwt.InvalidSignatureError:
                continue
            except jwt.InvalidTokenError as error:
                raise LogoutTokenRefused(str(error)) from error
        else:
            raise LogoutTokenRefused("no key of the provider's verifies the signature")
    if not isinstance(claims.get("events"), dict) or EVENT not in claims["events"]:
        raise LogoutTokenRefused("not a back-channel logout event")
    if "nonce" in claims:
        raise LogoutTokenRefused("a logout token must not carry a nonce")
    if not (claims.get("sub") or claims.get("sid")):
        raise LogoutTokenRefused("names neither a person (sub) nor a session (sid)")
    if not isinstance(claims["iat"], (int, float)) or time.time() - claims["iat"] > MAX_AGE_SECONDS:
        raise LogoutTokenRefused(f"issued more than {MAX_AGE_SECONDS} s ago")
    _once(found, claims)
    return found, claims


def _once(found: providers.Provider, claims: dict) -> None:
    """A logout token is used once (its `jti`, remembered until it expires): a captured one sent again later would
    end the person's newer sessions. With the cache out of reach, the token is honoured: ending sessions is the
    safe side, and the age bound above still holds."""
    key = "sso:logout-jti:" + hashlib.sha256(f"{found.issuer} {claims['jti']}".encode()).hexdigest()
    seconds = max(1, int(claims["exp"] - time.time()) + settings.OIDC_CLOCK_SKEW_SECONDS)
    if not cache.add(key, 1, timeout=seconds) and cache.get(key) is not None:
        raise LogoutTokenRefused("this logout token was used already")


def sessions_named(found: providers.Provider, claims: dict):
    rows = SignInSession.objects.filter(provider=found.key)
    if claims.get("sub"):
        # The identity keeps the issuer as the ID token said it (with or without a final "/").
        issuers = {found.issuer, str(claims.get("iss") or "")}
        identity = OidcIdentity.objects.filter(issuer__in=issuers, subject=claims["sub"]).first()
        rows = rows.filter(user_id=identity.user_id) if identity else rows.none()
    if claims.get("sid"):
        rows = rows.filter(sid=claims["sid"])
    return rows


@csrf_exempt
@never_cache
@require_POST
def backchannel_logout(request):
    try:
        found, claims = verify(request.POST.get("logout_token", ""))
    except LogoutTokenRefused as error:
        logger.warning("Back-channel logout refused: %s", error)
        return JsonResponse({"error": "invalid_request", "error_description": str(error)[:300]}, status=400)
    except discovery.ProviderUnavailable as error:
        logger.warning("Back-channel logout: the provider's keys are out of reach: %s", error)
        return JsonResponse({"error": "temporarily_unavailable"}, status=503)
    ended = sessions.end(sessions_named(found, claims))
    logger.info("Back-channel logout from %s (sub %s, sid %s): %d session(s) ended", found.key,
                claims.get("sub"), claims.get("sid"), ended)  # fmt: skip
    return JsonResponse({"ended": ended})
