"""The provider's endpoints, read from its discovery document and kept for an hour (they change with a provider's
reconfiguration, not per sign-in). Nothing is fetched until someone signs in: `make run` needs no provider."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import requests
from django.conf import settings

from tenants.sso import providers

logger = logging.getLogger("portal.sso")

DISCOVERY_SECONDS = 3600


class ProviderUnavailable(Exception):
    """The provider did not answer, or answered with an error of its own (5xx, a broken discovery document)."""


class ProviderMisconfigured(ProviderUnavailable):
    """The provider answers, but not as the portal is set up for it (its discovery document names another issuer):
    a matter for the program team, not something a retry mends."""

    def __init__(self, expected: str, named: str):
        super().__init__(f"the discovery document names issuer {named!r}, not {expected!r}")
        self.expected, self.named = expected, named


@dataclass(frozen=True)
class ProviderMetadata:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    userinfo_endpoint: str | None
    end_session_endpoint: str | None = None  # RP-Initiated Logout 1.0: signing out of the portal ends it there


_cache: dict[str, tuple[float, ProviderMetadata]] = {}


def metadata(provider=None) -> ProviderMetadata:
    """The discovery document of `provider` (by default the one of the sign-in under way, tenants.sso.providers)."""
    provider = provider or providers.current()
    if provider is None:
        raise ProviderUnavailable("no OpenID provider is being signed in with")
    issuer = provider.issuer
    cached = _cache.get(issuer)
    if cached and cached[0] > time.monotonic():
        return cached[1]
    url = f"{issuer}/.well-known/openid-configuration"
    try:
        response = requests.get(url, timeout=settings.OIDC_TIMEOUT)
        response.raise_for_status()
        document = response.json()
        found = ProviderMetadata(
            issuer=document["issuer"],
            authorization_endpoint=document["authorization_endpoint"],
            token_endpoint=document["token_endpoint"],
            jwks_uri=document["jwks_uri"],
            userinfo_endpoint=document.get("userinfo_endpoint"),
            end_session_endpoint=document.get("end_session_endpoint"),
        )
    except (requests.RequestException, ValueError, KeyError, TypeError) as error:
        logger.warning("OpenID provider discovery failed at %s: %s", url, error)
        raise ProviderUnavailable(str(error)) from error
    # OpenID Connect Discovery 4.3: the document must name the issuer it was fetched for.
    if found.issuer.rstrip("/") != issuer:
        logger.warning("OpenID provider at %s names another issuer: %s", url, found.issuer)
        raise ProviderMisconfigured(issuer, found.issuer)
    _cache[issuer] = (time.monotonic() + DISCOVERY_SECONDS, found)
    return found


def forget() -> None:
    """Read the discovery document again at the next sign-in (tests that move the provider)."""
    _cache.clear()
