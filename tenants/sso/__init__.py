"""Sign-in with the institution's OpenID Connect provider.

mozilla-django-oidc runs the protocol: the authorization code flow with PKCE, state and nonce kept in the session and
checked on return, the token request, the JWKS key matching the ID token's signature. This package adds what is the
portal's: the provider's endpoints from its discovery document (`provider.py`), the ID token's issuer, audience and
expiry checked (`backend.py`), the person found by issuer and subject, never by email (`models.py`, `services.py`),
organizations and roles from the groups claim (`mapping.py`), and pages that say what went wrong (`views.py`).
"""
