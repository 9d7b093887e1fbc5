"""Settings of sign-in (tenants/sso/, tenants/logins/): the institutions' providers, passwords. Star-imported by
portal/settings.py, read from the environment like the rest.

One OpenID provider is set with the OIDC_* variables below; any number of providers (several OpenID providers, SAML
identity providers and federations) with SSO_PROVIDERS, a JSON list, or SSO_PROVIDERS_FILE, a JSON file holding that
list: each entry is described in tenants/sso/providers.py and docs/operations/sign-in.md ("Several providers").
"""

import json
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from portal.environment import env, env_bool, env_int, origins

# --- One OpenID Connect provider (mozilla-django-oidc; tenants/sso/) ----------------------------------------
# Unset OIDC_ISSUER_URL: no such provider. Endpoints and signing keys come from the issuer's discovery document
# (<issuer>/.well-known/openid-configuration).
OIDC_ISSUER_URL = env("OIDC_ISSUER_URL").rstrip("/")
OIDC_PROVIDER_NAME = env("OIDC_PROVIDER_NAME", "your institution")  # "Sign in with <name>"
OIDC_RP_CLIENT_ID = env("OIDC_CLIENT_ID")
OIDC_RP_CLIENT_SECRET = env("OIDC_CLIENT_SECRET")
OIDC_RP_SCOPES = env("OIDC_SCOPES", "openid email profile groups")
OIDC_RP_SIGN_ALGO = env("OIDC_SIGN_ALGORITHM", "RS256")  # an ID token signed otherwise is refused
OIDC_USE_PKCE = True
OIDC_USE_NONCE = True
OIDC_STORE_ID_TOKEN = True  # kept in the session for the provider's sign-out (id_token_hint)
OIDC_TIMEOUT = env_int("OIDC_TIMEOUT_SECONDS", 10)  # each call to a provider
OIDC_CLOCK_SKEW_SECONDS = env_int("OIDC_CLOCK_SKEW_SECONDS", 60)  # leeway on an ID token's exp and iat
# The claim listing a person's groups, and the groups that place people: "<prefix>:<org-slug>:<role>",
# "<prefix>:staff:<staff-role>" (or a path, "/<prefix>/<org-slug>/<role>"), plus OIDC_GROUP_MAP, a JSON object
# from a group name the institution already has to "<org-slug>:<role>" or "staff:<staff-role>".
OIDC_GROUPS_CLAIM = env("OIDC_GROUPS_CLAIM", "groups")
OIDC_GROUP_PREFIX = env("OIDC_GROUP_PREFIX", "fmportal")
try:
    OIDC_GROUP_MAP = json.loads(env("OIDC_GROUP_MAP") or "{}")
except ValueError as error:
    raise ImproperlyConfigured(f"OIDC_GROUP_MAP must be a JSON object: {error}") from None
if not isinstance(OIDC_GROUP_MAP, dict) or not all(isinstance(v, str) for v in OIDC_GROUP_MAP.values()):
    raise ImproperlyConfigured('OIDC_GROUP_MAP must be a JSON object of strings, {"group": "org-slug:role"}.')
# True: an email address the provider sends without `email_verified` counts as verified (providers that only send
# addresses they manage, e.g. Entra ID's tenant). An address sent with email_verified=false never counts.
OIDC_TRUST_EMAIL = env_bool("OIDC_TRUST_EMAIL", False)
if OIDC_ISSUER_URL and not (OIDC_RP_CLIENT_ID and OIDC_RP_CLIENT_SECRET):
    raise ImproperlyConfigured("OIDC_ISSUER_URL needs OIDC_CLIENT_ID and OIDC_CLIENT_SECRET.")

# A page view of someone signed in with an OpenID provider asks that provider again, silently (prompt=none), once
# this many minutes have passed since the last answer: someone signed out or disabled there is signed out here. 0: off.
SSO_RECHECK_MINUTES = env_int("SSO_RECHECK_MINUTES", 30)

# --- Any number of providers ---------------------------------------------------------------------------------
SSO_PROVIDERS_FILE = env("SSO_PROVIDERS_FILE")
try:
    SSO_PROVIDERS = json.loads(
        Path(SSO_PROVIDERS_FILE).read_text(encoding="utf-8") if SSO_PROVIDERS_FILE else env("SSO_PROVIDERS") or "[]"
    )
except (OSError, ValueError) as error:
    raise ImproperlyConfigured(f"SSO_PROVIDERS(_FILE) must hold a JSON list of providers: {error}") from None
if not isinstance(SSO_PROVIDERS, list) or not all(isinstance(entry, dict) for entry in SSO_PROVIDERS):
    raise ImproperlyConfigured('SSO_PROVIDERS must be a JSON list of objects, [{"key": "…", "protocol": "oidc", …}].')
# The origins a sign-in form may post to (the CSP's form-action): every OpenID provider's.
SSO_FORM_ORIGINS = origins(OIDC_ISSUER_URL, *(str(p.get("issuer") or "") for p in SSO_PROVIDERS if p.get("issuer")))

# Whom a person the groups place nowhere should ask (shown on that page and on an empty home page).
PROGRAM_CONTACT_EMAIL = env("PROGRAM_CONTACT_EMAIL")
# False: only break-glass accounts (Django superusers) sign in with a password, on the login page's
# administrator form, in Django admin and at the token endpoint; everyone else signs in with a provider.
LOCAL_PASSWORD_LOGIN = env_bool("LOCAL_PASSWORD_LOGIN", True)
if not LOCAL_PASSWORD_LOGIN and not (OIDC_ISSUER_URL or SSO_PROVIDERS):
    raise ImproperlyConfigured(
        "LOCAL_PASSWORD_LOGIN=False needs a provider to sign in with: set OIDC_ISSUER_URL or SSO_PROVIDERS."
    )
