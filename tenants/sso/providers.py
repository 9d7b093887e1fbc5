"""The identity providers people sign in with: each has its own button on the login page, its own claims (or SAML
attributes) and its own group → role rules, all from settings, none from code.

A provider comes from one entry of SSO_PROVIDERS (JSON; SSO_PROVIDERS_FILE names a file holding the list), or from
the OIDC_* variables (one OpenID provider, key "oidc"). An entry's fields:

- `key` (a slug, in URLs and sessions), `name` ("Sign in with <name>"), `protocol`: "oidc" or "saml";
- `groups_claim` (default "groups"), `group_prefix` (default OIDC_GROUP_PREFIX), `group_map` ({group: "org:role"}),
  as tenants/sso/mapping.py reads them;
- `trust_email` (default false): an address sent without email_verified counts as verified;
- "oidc": `issuer`, `client_id`, `client_secret` (or `client_secret_env`, the name of an environment variable holding
  it), `scopes` (default "openid email profile"), `sign_algorithm` (default "RS256"), `claims` (the portal's names
  → the provider's claim names, for providers that say `mail` where OpenID says `email`);
- "saml": read by tenants/sso/saml/ (`metadata_url` or `metadata_file`, `idp_entity_id`, `attributes`).
"""

from __future__ import annotations

import contextvars
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass, field

from django.conf import settings
from django.urls import reverse
from django.utils.http import urlencode

PROTOCOLS = ("oidc", "saml")
KEY = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")
# The portal's claim names, as OpenID Connect Core 5.1 names them; a provider's `claims` maps them to its own.
CLAIMS = ("email", "email_verified", "preferred_username", "given_name", "family_name", "name")
LEGACY_KEY = "oidc"


class ProviderConfigError(ValueError):
    """An SSO_PROVIDERS entry that cannot be used: what is wrong, for `manage.py check`."""


@dataclass(frozen=True)
class Provider:
    key: str
    name: str
    protocol: str
    groups_claim: str = "groups"
    group_prefix: str = "fmportal"
    group_map: dict = field(default_factory=dict)
    trust_email: bool = False
    # OpenID Connect
    issuer: str = ""
    client_id: str = ""
    client_secret: str = ""
    scopes: str = "openid email profile"
    sign_algorithm: str = "RS256"
    claims: dict = field(default_factory=dict)
    # Everything else of the entry (SAML's settings are read by tenants/sso/saml/).
    options: dict = field(default_factory=dict)

    def claim(self, name: str) -> str:
        """The provider's name for one of the portal's claims (CLAIMS)."""
        return self.claims.get(name, name)

    def login_url(self, next_url: str = "") -> str:
        """Where "Sign in with <name>" goes, coming back to `next_url` (a path of the portal's) once signed in."""
        query = {"next": next_url} if next_url else {}
        if self.protocol == "saml":
            path = reverse("saml-login", args=[self.key])
        else:
            path, query = reverse("oidc_authentication_init"), {"provider": self.key, **query}
        return f"{path}?{urlencode(query)}" if query else path


def _from_entry(entry: dict) -> Provider:
    entry = dict(entry)
    key, protocol = str(entry.get("key", "")), str(entry.get("protocol", "oidc"))
    if not KEY.match(key):
        raise ProviderConfigError(f"key {key!r} must be a slug: lower-case letters, digits and hyphens, ≤ 40")
    if protocol not in PROTOCOLS:
        raise ProviderConfigError(f"provider {key!r}: protocol must be one of {', '.join(PROTOCOLS)}")
    if not isinstance(entry.get("group_map", {}), dict) or not isinstance(entry.get("claims", {}), dict):
        raise ProviderConfigError(f"provider {key!r}: group_map and claims must be JSON objects")
    secret = entry.pop("client_secret", "") or os.environ.get(str(entry.pop("client_secret_env", "") or "-"), "")
    known = {f for f in Provider.__dataclass_fields__ if f not in ("options", "client_secret")}
    fields = {name: entry.pop(name) for name in list(entry) if name in known}
    fields.setdefault("name", key)
    fields.setdefault("group_prefix", settings.OIDC_GROUP_PREFIX)
    fields["issuer"] = str(fields.get("issuer", "")).rstrip("/")
    fields["trust_email"] = bool(fields.get("trust_email", False))
    provider = Provider(**fields, client_secret=secret, options=entry)
    if protocol == "oidc" and not (provider.issuer and provider.client_id and provider.client_secret):
        raise ProviderConfigError(f"provider {key!r}: an OpenID provider needs issuer, client_id and client_secret")
    return provider


def _legacy() -> list[Provider]:
    if not settings.OIDC_ISSUER_URL:
        return []
    return [
        Provider(
            key=LEGACY_KEY,
            name=settings.OIDC_PROVIDER_NAME,
            protocol="oidc",
            groups_claim=settings.OIDC_GROUPS_CLAIM,
            group_prefix=settings.OIDC_GROUP_PREFIX,
            group_map=settings.OIDC_GROUP_MAP,
            trust_email=settings.OIDC_TRUST_EMAIL,
            issuer=settings.OIDC_ISSUER_URL.rstrip("/"),
            client_id=settings.OIDC_RP_CLIENT_ID,
            client_secret=settings.OIDC_RP_CLIENT_SECRET,
            scopes=settings.OIDC_RP_SCOPES,
            sign_algorithm=settings.OIDC_RP_SIGN_ALGO,
        )
    ]


def configured() -> tuple[list[Provider], list[str]]:
    """Every usable provider, in the order given (the OIDC_* one first), and what is wrong with the others."""
    found, errors, keys = _legacy(), [], {LEGACY_KEY} if settings.OIDC_ISSUER_URL else set()
    for entry in settings.SSO_PROVIDERS:
        try:
            provider = _from_entry(entry)
        except ProviderConfigError as error:
            errors.append(str(error))
            continue
        if provider.key in keys:
            errors.append(f"provider key {provider.key!r} is used twice")
            continue
        keys.add(provider.key)
        found.append(provider)
    return found, errors


def all() -> list[Provider]:  # noqa: A001 (providers.all(), as a module of one kind of thing)
    return configured()[0]


def get(key: str | None) -> Provider | None:
    return next((provider for provider in all() if provider.key == key), None)


def by_issuer(issuer: str) -> Provider | None:
    return next((p for p in all() if p.issuer == issuer.rstrip("/") or p.options.get("idp_entity_id") == issuer), None)


def enabled() -> bool:
    return bool(all())


# The provider of the sign-in this request is doing (tenants.sso.backend reads mozilla-django-oidc's settings from it).
_current: contextvars.ContextVar[Provider | None] = contextvars.ContextVar("sso_provider", default=None)


@contextmanager
def using(provider: Provider):
    token = _current.set(provider)
    try:
        yield provider
    finally:
        _current.reset(token)


def current() -> Provider | None:
    return _current.get()
