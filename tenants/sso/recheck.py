"""Leavers lose their pages: a session signed in with an OpenID provider is checked with that provider again once
SSO_RECHECK_MINUTES have passed (OpenID Connect's silent re-authentication, `prompt=none`, as mozilla-django-oidc's
SessionRefresh does, for whichever provider the person used). The next page they open goes to the provider and
straight back: still signed in there, they carry on where they were; signed out or disabled there, the provider
answers `login_required` and the portal signs them out too (tenants.sso.views.CallbackView).

Every request of such a session waits for the check once it is due, so that no kind of request lets a session go on
unchecked: a page view goes to the provider and comes back to itself; an htmx request makes the whole page do so
(HX-Redirect); another write (a form's POST) goes to the provider and back to the page it was sent from (the form is
sent again after); the API with the session's cookie (the browsable API) is answered 401 until a page view has
re-checked. The API with a token is not a session's (SCIM deprovisioning revokes tokens). A provider that ends
sessions itself reaches the portal at once through back-channel logout (tenants/sso/logout.py).
"""

from __future__ import annotations

import time
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpResponse, HttpResponseRedirect, JsonResponse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _

from tenants.sso import providers, sessions

CHECKED = "sso_checked_at"  # session: when the provider last said this person is signed in (epoch seconds)
EXEMPT = ("/oidc/", "/saml/", "/static/", "/metrics", "/health", "/logout/", "/scim/")


def mark_checked(session) -> None:
    session[CHECKED] = time.time()


def due(request) -> providers.Provider | None:
    """The provider to ask again, when this request is a page view of a session whose check is due."""
    minutes = settings.SSO_RECHECK_MINUTES
    if not minutes or "Authorization" in request.headers:  # a token's request, not the session's
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
        if found is None:
            return self.get_response(request)
        if request.path.startswith("/api/"):
            message = _("Your sign-in with %(provider)s is due to be checked again: open any page of the portal.")
            return JsonResponse({"detail": message % {"provider": found.name}}, status=401)
        if request.headers.get("HX-Request"):
            response = HttpResponse(status=204)
            response["HX-Redirect"] = recheck_url(
                found, _same_site_path(request, request.headers.get("HX-Current-URL"))
            )
            return response
        if request.method not in ("GET", "HEAD"):
            return HttpResponseRedirect(
                recheck_url(found, _same_site_path(request, request.headers.get("Referer"))), status=303
            )
        return HttpResponseRedirect(recheck_url(found, request.get_full_path()))


def recheck_url(found: providers.Provider, next_url: str) -> str:
    return f"{found.login_url(next_url)}&recheck=1"


def _same_site_path(request, url: str | None) -> str:
    """The path (and query) of `url` when it is a page of this site, else the home page."""
    if url and url_has_allowed_host_and_scheme(url, allowed_hosts={request.get_host()}):
        parts = urlsplit(url)
        return parts.path + (f"?{parts.query}" if parts.query else "")
    return "/"
