"""mozilla-django-oidc's backend for the provider being signed in with (tenants.sso.providers): its endpoints from
discovery, the ID token's issuer, audience and expiry verified besides its signature, its key picked as JOSE allows,
and the person found by issuer and subject (tenants.sso.services, through tenants.sso.flow)."""

from __future__ import annotations

import jwt
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings

from tenants.sso import flow, provider, providers, services, sessions

# mozilla-django-oidc's settings that name an endpoint → the discovery document's field giving it.
DISCOVERED = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}
# Claims that only the ID token may give: userinfo's copy of them never wins.
ID_TOKEN_ONLY = {"iss", "sub", "aud", "azp", "exp", "iat", "nbf", "nonce", "auth_time", "at_hash", "sid"}


# mozilla-django-oidc's settings that are each provider's own (tenants.sso.providers.Provider's fields).
PER_PROVIDER = {
    "OIDC_RP_CLIENT_ID": "client_id",
    "OIDC_RP_CLIENT_SECRET": "client_secret",
    "OIDC_RP_SCOPES": "scopes",
    "OIDC_RP_SIGN_ALGO": "sign_algorithm",
}
# JSON Web Key types by the family of the signing algorithm (RFC 7518 3.1, RFC 8037).
KEY_TYPES = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}


def setting(name: str, *default):
    """A mozilla-django-oidc setting for the provider being signed in with: endpoints from its discovery document,
    its client and algorithm from its entry, the rest from settings."""
    if name in DISCOVERED:
        return getattr(provider.metadata(), DISCOVERED[name])
    if name in PER_PROVIDER:
        current = providers.current()
        if current is None:
            raise provider.ProviderUnavailable("no OpenID provider is being signed in with")
        return getattr(current, PER_PROVIDER[name])
    return import_from_settings(name, *default)


class OidcBackend(OIDCAuthenticationBackend):
    """Idle unless OIDC_ISSUER_URL is set, and then only on the callback (the view passes the session's nonce):
    a password login never reaches the provider. Nothing is fetched when the backend is made, since Django makes
    one on every request of a person signed in this way."""

    def __init__(self, *args, **kwargs):
        self.UserModel = get_user_model()
        self.OIDC_RP_IDP_SIGN_KEY = None  # always the provider's published keys (JWKS)

    get_settings = staticmethod(setting)
    OIDC_RP_SIGN_ALGO = property(lambda self: setting("OIDC_RP_SIGN_ALGO"))
    OIDC_RP_CLIENT_ID = property(lambda self: setting("OIDC_RP_CLIENT_ID"))
    OIDC_RP_CLIENT_SECRET = property(lambda self: setting("OIDC_RP_CLIENT_SECRET"))
    OIDC_OP_TOKEN_ENDPOINT = property(lambda self: setting("OIDC_OP_TOKEN_ENDPOINT"))
    OIDC_OP_USER_ENDPOINT = property(lambda self: setting("OIDC_OP_USER_ENDPOINT"))
    OIDC_OP_JWKS_ENDPOINT = property(lambda self: setting("OIDC_OP_JWKS_ENDPOINT"))

    def authenticate(self, request, **kwargs):
        if providers.current() is None or "nonce" not in kwargs:
            return None
        return super().authenticate(request, **kwargs)

    def retrieve_matching_jwk(self, token) -> list:
        """The provider's published keys that may have signed the token, as JOSE allows picking them (RFC 7515
        4.1.4, RFC 7517 4): the one its `kid` names; without a `kid`, every signing key of the algorithm's type
        (a provider with one key often sends none), each tried in turn. No candidate: the sign-in is refused."""
        try:
            header = jwt.get_unverified_header(token)
            response = requests.get(self.OIDC_OP_JWKS_ENDPOINT, timeout=settings.OIDC_TIMEOUT)
            response.raise_for_status()
            keys = response.json()["keys"]
        except jwt.InvalidTokenError as error:
            raise services.SignInRefused(f"ID token unreadable: {error}") from error
        except (ValueError, KeyError, TypeError, requests.RequestException) as error:
            raise provider.ProviderUnavailable(f"the provider's key set is out of reach: {error}") from error
        algorithm, kid = header.get("alg"), header.get("kid")
        candidates = []
        for jwk in keys if isinstance(keys, list) else []:
            if not isinstance(jwk, dict) or (kid is not None and jwk.get("kid") != kid):
                continue
            if jwk.get("alg", algorithm) != algorithm or jwk.get("use", "sig") != "sig":
                continue
            if kid is None and jwk.get("kty") != KEY_TYPES.get(str(algorithm)[:2]):
                continue
            try:
                candidates.append(jwt.PyJWK(jwk, algorithm))
            except jwt.PyJWTError:
                continue  # a key of a kind this library cannot use
        if not candidates:
            named = f"key {kid!r}" if kid is not None else f"a {algorithm} key"
            raise services.SignInRefused(f"the provider publishes no {named} to verify the ID token with")
        return candidates

    def _verify_jws(self, payload, key):
        """The library checks the algorithm and the signature; the ID token must also come from our issuer, be
        meant for us (aud, and azp when there are several audiences) and not have expired (OIDC Core 3.1.3.7).
        `key`: the candidates of retrieve_matching_jwk, the first whose signature holds verifies the token."""
        header = jwt.get_unverified_header(payload)
        if header.get("alg") != self.OIDC_RP_SIGN_ALGO:
            raise services.SignInRefused(f"ID token signed with {header.get('alg')!r}, not {self.OIDC_RP_SIGN_ALGO}")
        candidates = key if isinstance(key, list) else [key]
        for candidate in candidates[:-1]:
            try:
                jwt.decode(payload, candidate, algorithms=[self.OIDC_RP_SIGN_ALGO], options={"verify_aud": False,
                           "verify_exp": False, "verify_iat": False, "verify_nbf": False})  # fmt: skip
            except jwt.InvalidSignatureError:
                continue
            except jwt.InvalidTokenError:
                pass
            key = candidate
            break
        else:
            key = candidates[-1]
        try:
            claims = jwt.decode(
                payload,
                key,
                algorithms=[self.OIDC_RP_SIGN_ALGO],
                audience=self.OIDC_RP_CLIENT_ID,
                issuer=provider.metadata().issuer,
                leeway=settings.OIDC_CLOCK_SKEW_SECONDS,
                options={"require": ["iss", "sub", "aud", "exp", "iat"]},
            )
        except jwt.InvalidTokenError as error:
            raise services.SignInRefused(f"ID token refused: {error}") from error
        audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
        if len(audiences) > 1 and claims.get("azp") != self.OIDC_RP_CLIENT_ID:
            raise services.SignInRefused("ID token for several audiences without us as its authorized party")
        return claims

    def get_or_create_user(self, access_token, id_token, payload):
        """The ID token's verified claims, completed by userinfo (the groups are often only there)."""
        claims = dict(payload)
        if setting("OIDC_OP_USER_ENDPOINT"):
            userinfo = self.get_userinfo(access_token, id_token, payload)
            if userinfo.get("sub") != payload["sub"]:  # OIDC Core 5.3.4: a mismatch must not be used
                raise services.SignInRefused("userinfo is about another subject than the ID token")
            claims.update({k: v for k, v in userinfo.items() if k not in ID_TOKEN_ONLY})
        self.request.session[sessions.SID] = str(payload.get("sid") or "")  # for back-channel logout
        return flow.sign_in(self.request, providers.current(), claims)

    def get_user(self, user_id):
        """The session's user, while the account is active (the library's own would keep a deactivated one)."""
        user = super().get_user(user_id)
        return user if user is not None and user.is_active else None
