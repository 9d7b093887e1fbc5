"""Leavers lose their pages: a session signed in with an OpenID provider is checked with that provider again once
SSO_RECHECK_MINUTES have passed (OpenID Connect's silent re-authentication, `prompt=none`, as mozilla-django-oidc's
SessionRefresh does, for whichever provider the person used). The next page they open goes to the provider and
straight back: still signed in there, they carry on where they were; signed out or disabled there, the provider
answers `login_required` and the portal signs them out too (tenants.sso.views.CallbackView).

Only full page views are re-checked (GET, not htmx, not the API, whose tokens SCIM deprovisioning revokes); a
provider that ends sessions itself reaches the portal at once through back-channel logout (tenants/sso/logout.py).
"""

from __future__ import annotations

import time

from django.conf import settings
from django.http import HttpResponseRedirect

from tenants.sso import providers, sessions

CHECKED = "sso_checked_at"  # session: when the provider last said this person is signed in (epoch seconds)
EXEMPT = ("/oidc/", "/saml/", "/api/", "/static/", "/metrics", "/health", "/logout/", "/scim/")


def mark_checked(session) -> None:
    session[CHECKED] = time.time()


def due(request) -> providers.Provider | None:
    """The provider to ask again, when this request is a page view of a session whose check is due."""
    minutes = settings.SSO_RECHECK_MINUTES
    if not minutes or request.method != "GET" or request.headers.get("HX-Request"):
        return None
    if not request.user.is_authenticated or request.path.startswith(EXEMPT):
        return None
    key = request.session.get(sessions.PROVIDER)
    if not key or time.time() < request.session.get(CHECKED, 0) + minutes * 60:
        return None
    found = providers.get(key)
    return found if found is not None and found.protocol == "oidc" else None


class SessionRecheckMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        found = due(request)
        if found is not None:
            return HttpResponseRedirect(f"{found.login_url(request.get_full_path())}&recheck=1")
        return self.get_response(request)
