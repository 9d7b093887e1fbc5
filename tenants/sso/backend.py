"""mozilla-django-oidc's backend, with the provider's endpoints from discovery, the ID token's issuer, audience
and expiry verified besides its signature, and the person found by issuer and subject (tenants.sso.services)."""

from __future__ import annotations

import jwt
from django.conf import settings
from django.contrib.auth import get_user_model
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings

from tenants.sso import provider, services

# mozilla-django-oidc's settings that name an endpoint → the discovery document's field giving it.
DISCOVERED = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}
# Claims that only the ID token may give: userinfo's copy of them never wins.
ID_TOKEN_ONLY = {"iss", "sub", "aud", "azp", "exp", "iat", "nbf", "nonce", "auth_time", "at_hash", "sid"}


def setting(name: str, *default):
    """A mozilla-django-oidc setting: endpoints from the provider's discovery document, the rest from settings."""
    if name in DISCOVERED:
        return getattr(provider.metadata(), DISCOVERED[name])
    return import_from_settings(name, *default)


class OidcBackend(OIDCAuthenticationBackend):
    """Idle unless OIDC_ISSUER_URL is set, and then only on the callback (the view passes the session's nonce):
    a password login never reaches the provider. Nothing is fetched when the backend is made, since Django makes
    one on every request of a person signed in this way."""

    def __init__(self, *args, **kwargs):
        self.UserModel = get_user_model()
        self.OIDC_RP_SIGN_ALGO = settings.OIDC_RP_SIGN_ALGO
        self.OIDC_RP_IDP_SIGN_KEY = None  # always the provider's published keys (JWKS)

    get_settings = staticmethod(setting)
    OIDC_RP_CLIENT_ID = property(lambda self: settings.OIDC_RP_CLIENT_ID)
    OIDC_RP_CLIENT_SECRET = property(lambda self: settings.OIDC_RP_CLIENT_SECRET)
    OIDC_OP_TOKEN_ENDPOINT = property(lambda self: setting("OIDC_OP_TOKEN_ENDPOINT"))
    OIDC_OP_USER_ENDPOINT = property(lambda self: setting("OIDC_OP_USER_ENDPOINT"))
    OIDC_OP_JWKS_ENDPOINT = property(lambda self: setting("OIDC_OP_JWKS_ENDPOINT"))

    def authenticate(self, request, **kwargs):
        if not provider.enabled() or "nonce" not in kwargs:
            return None
        return super().authenticate(request, **kwargs)

    def _verify_jws(self, payload, key):
        """The library checks the algorithm and the signature; the ID token must also come from our issuer, be
        meant for us (aud, and azp when there are several audiences) and not have expired (OIDC Core 3.1.3.7)."""
        header = jwt.get_unverified_header(payload)
        if header.get("alg") != self.OIDC_RP_SIGN_ALGO:
            raise services.SignInRefused(f"ID token signed with {header.get('alg')!r}, not {self.OIDC_RP_SIGN_ALGO}")
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
        return services.sign_in(claims=claims)

    def get_user(self, user_id):
        """The session's user, while the account is active (the library's own would keep a deactivated one)."""
        user = super().get_user(user_id)
        return user if user is not None and user.is_active else None
