"""Sign-in with the provider: the start (a redirect to the provider) and the return (the callback), both
mozilla-django-oidc's views, and the page saying what went wrong when the sign-in cannot go on."""

from __future__ import annotations

import logging
from urllib.parse import urlencode

import requests
from django.conf import settings
from django.contrib.auth.views import LogoutView
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.generic import View
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from tenants.logins.lockout import is_locked_out
from tenants.sso import provider
from tenants.sso.backend import setting
from tenants.sso.services import AccountDisabled, NotPlaced, SignInRefused

logger = logging.getLogger("portal.sso")


def problem(request, *, title: str, message: str, status: int, placement=None, email: str = ""):
    """The page a person sees instead of the portal when sign-in stops: what happened and whom to ask."""
    context = {
        "title": title,
        "message": message,
        "provider_name": settings.OIDC_PROVIDER_NAME,
        "contact_email": settings.PROGRAM_CONTACT_EMAIL,
        "placement": placement,
        "email": email,
    }
    return render(request, "tenants/sso/problem.html", context, status=status)


def unavailable(request):
    return problem(
        request,
        title=_("%(provider)s is not answering") % {"provider": settings.OIDC_PROVIDER_NAME},
        message=_(
            "The portal could not reach %(provider)s to sign you in. Nothing was changed. Try again in a few "
            "minutes; if it goes on, tell the program team."
        )
        % {"provider": settings.OIDC_PROVIDER_NAME},
        status=503,
    )


def refused(request, message: str | None = None):
    return problem(
        request,
        title=_("Sign-in not completed"),
        message=message
        or _(
            "The answer from %(provider)s could not be verified, so you were not signed in and nothing was changed. "
            "This happens when a sign-in is started in another window or left open too long. Start again."
        )
        % {"provider": settings.OIDC_PROVIDER_NAME},
        status=400,
    )


class SignInView(OIDCAuthenticationRequestView):
    """Redirects to the provider with state, nonce and a PKCE challenge, kept in the session for the return."""

    def __init__(self, **kwargs):
        View.__init__(self, **kwargs)  # the library's reads the endpoint here, before a failure can be answered

    get_settings = staticmethod(setting)
    OIDC_RP_CLIENT_ID = property(lambda self: settings.OIDC_RP_CLIENT_ID)
    OIDC_OP_AUTH_ENDPOINT = property(lambda self: setting("OIDC_OP_AUTHORIZATION_ENDPOINT"))

    def get(self, request):
        if not provider.enabled():
            raise Http404(_("Sign-in with an institution is not set up here."))
        try:
            return super().get(request)
        except provider.ProviderUnavailable:
            return unavailable(request)


class CallbackView(OIDCAuthenticationCallbackView):
    """The provider's answer: the library checks the state against the session and takes the nonce and PKCE
    verifier from it (once: a replayed answer finds nothing), then the backend trades the code for tokens."""

    get_settings = staticmethod(setting)

    def get(self, request):
        if not provider.enabled():
            raise Http404(_("Sign-in with an institution is not set up here."))
        # RFC 9207: a provider that says who answered must be ours (a mix-up of providers is refused).
        if "iss" in request.GET and request.GET["iss"].rstrip("/") != settings.OIDC_ISSUER_URL:
            logger.warning("Sign-in answer from another issuer: %r", request.GET["iss"])
            return refused(request)
        try:
            return super().get(request)
        except NotPlaced as error:
            logger.info("Sign-in of %s: %s", error.email or "someone", error.reason)
            return problem(
                request,
                title=_("You are not yet in any organization of the program"),
                message=_(
                    "%(provider)s signed you in, but none of your groups there gives you access to an organization "
                    "of the program. Ask your organization's admin or the program team to add you, then sign in again."
                )
                % {"provider": settings.OIDC_PROVIDER_NAME},
                status=403,
                placement=error.placement,
                email=error.email,
            )
        except AccountDisabled:
            return problem(
                request,
                title=_("Your account is deactivated"),
                message=_("Your account in the portal has been deactivated. Ask the program team."),
                status=403,
            )
        except (SignInRefused, SuspiciousOperation) as error:
            logger.warning("Sign-in refused: %s", error)
            return refused(request)
        except provider.ProviderUnavailable:
            return unavailable(request)
        except requests.HTTPError as error:
            logger.warning("Sign-in: the provider answered %s", error)
            status = error.response.status_code if error.response is not None else 502
            return refused(request) if 400 <= status < 500 else unavailable(request)
        except requests.RequestException as error:
            logger.warning("Sign-in: the provider is unreachable: %s", error)
            return unavailable(request)

    def login_failure(self):
        request = self.request
        if request.GET.get("error"):
            # The provider said no (the person cancelled, or is not allowed to use this application there).
            detail = request.GET.get("error_description") or request.GET["error"]
            return refused(
                request,
                _("%(provider)s did not sign you in: %(detail)s")
                % {"provider": settings.OIDC_PROVIDER_NAME, "detail": detail[:300]},
            )
        if is_locked_out(request):
            return refused(request, _("Too many failed logins from this address. Try again later."))
        return refused(request)


class SignOutView(LogoutView):
    """Signs out of the portal (every session's data dropped, as Django's), then, for someone who signed in with
    the provider, sends them to its end-session endpoint (OpenID Connect RP-Initiated Logout) with the ID token as
    the hint and the login page to come back to: on a shared machine, "Sign in with…" then asks who they are
    again. A provider that does not say where, or does not answer, leaves them signed out of the portal alone."""

    def post(self, request, *args, **kwargs):
        id_token = request.session.get("oidc_id_token")
        response = super().post(request, *args, **kwargs)
        ending = end_session_url(request, id_token) if id_token and provider.enabled() else None
        return HttpResponseRedirect(ending) if ending else response


def end_session_url(request, id_token: str) -> str | None:
    try:
        endpoint = provider.metadata().end_session_endpoint
    except provider.ProviderUnavailable:
        logger.warning("Signed out of the portal only: the provider is not answering")
        return None
    if not endpoint:
        return None
    query = {
        "id_token_hint": id_token,
        "client_id": settings.OIDC_RP_CLIENT_ID,
        "post_logout_redirect_uri": request.build_absolute_uri(reverse(settings.LOGOUT_REDIRECT_URL)),
    }
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{urlencode(query)}"
