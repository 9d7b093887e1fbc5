"""Sign-in with the provider: the start (a redirect to the provider) and the return (the callback), both
mozilla-django-oidc's views, and the page saying what went wrong when the sign-in cannot go on."""

from __future__ import annotations

import logging
from urllib.parse import parse_qs, urlencode, urlsplit

import requests
from django.conf import settings
from django.contrib.auth.views import LogoutView
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpResponseRedirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.generic import View
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from tenants.logins.lockout import is_locked_out
from tenants.sso import flow, provider, providers, recheck, services, sessions
from tenants.sso.backend import setting

logger = logging.getLogger("portal.sso")


STATES = "sso_states"  # session: each sign-in under way (its OAuth state) → the provider it went to


def _provider_for_start(request) -> providers.Provider:
    """?provider=<key>; without one, the only OpenID provider when there is one."""
    openid = [p for p in providers.all() if p.protocol == "oidc"]
    key = request.GET.get("provider")
    found = providers.get(key) if key else (openid[0] if len(openid) == 1 else None)
    if found is None or found.protocol != "oidc":
        raise Http404(_("No such way to sign in here."))
    return found


class SignInView(OIDCAuthenticationRequestView):
    """Redirects to the provider with state, nonce and a PKCE challenge, kept in the session for the return, and
    which provider that state went to."""

    def __init__(self, **kwargs):
        View.__init__(self, **kwargs)  # the library's reads the endpoint here, before a failure can be answered

    get_settings = staticmethod(setting)
    OIDC_RP_CLIENT_ID = property(lambda self: setting("OIDC_RP_CLIENT_ID"))
    OIDC_OP_AUTH_ENDPOINT = property(lambda self: setting("OIDC_OP_AUTHORIZATION_ENDPOINT"))

    def get_extra_params(self, request):
        # A re-check (tenants.sso.recheck) asks the provider not to show anything: it answers at once.
        return {**super().get_extra_params(request), **({"prompt": "none"} if "recheck" in request.GET else {})}

    def get(self, request):
        chosen = _provider_for_start(request)
        with providers.using(chosen):
            try:
                response = super().get(request)
            except provider.ProviderUnavailable as error:
                return flow.unavailable(request, chosen, error)
        state = parse_qs(urlsplit(response["Location"]).query).get("state", [""])[0]
        started = request.session.get(STATES, {})
        started = dict(list(started.items())[-(MAX_STARTED - 1) :])  # the library keeps as many states
        request.session[STATES] = {**started, state: chosen.key}
        return response


MAX_STARTED = 50
# A silent re-check's answers meaning the person is not (or no longer) signed in at the provider (OIDC Core 3.1.2.6).
SIGNED_OUT_THERE = {"login_required", "interaction_required", "consent_required", "account_selection_required"}


class CallbackView(OIDCAuthenticationCallbackView):
    """The provider's answer: the library checks the state against the session and takes the nonce and PKCE
    verifier from it (once: a replayed answer finds nothing), then the backend trades the code for tokens at the
    provider that state went to."""

    get_settings = staticmethod(setting)

    def get(self, request):
        chosen = providers.get(request.session.get(STATES, {}).get(request.GET.get("state", "")))
        if chosen is None:
            if not any(p.protocol == "oidc" for p in providers.all()):
                raise Http404(_("Sign-in with an institution is not set up here."))
            return flow.refused(request, None)
        # RFC 9207: a provider that says who answered must be the one asked (a mix-up of providers is refused).
        if "iss" in request.GET and request.GET["iss"].rstrip("/") != chosen.issuer:
            logger.warning("Sign-in answer from another issuer: %r", request.GET["iss"])
            return flow.refused(request, chosen)
        self.provider = chosen
        with providers.using(chosen):
            try:
                return super().get(request)
            except (services.SignInRefused, provider.ProviderUnavailable) as error:
                return flow.failure(request, chosen, error)
            except SuspiciousOperation as error:
                logger.warning("Sign-in refused: %s", error)
                return flow.refused(request, chosen)
            except requests.HTTPError as error:
                logger.warning("Sign-in: the provider answered %s", error)
                status = error.response.status_code if error.response is not None else 502
                return flow.refused(request, chosen) if 400 <= status < 500 else flow.unavailable(request, chosen)
            except requests.RequestException as error:
                logger.warning("Sign-in: the provider is unreachable: %s", error)
                return flow.unavailable(request, chosen)

    @property
    def success_url(self):
        return flow.landing(self.request, super().success_url)

    def login_success(self):
        response = super().login_success()
        self.request.session[flow.PROVIDER] = self.provider.key
        recheck.mark_checked(self.request.session)
        self.request.session.save()  # its key, for the record (a re-check of the same person keeps the session)
        sessions.note_session(self.request, self.user)  # the provider's session id of this sign-in or re-check
        return response

    def login_failure(self):
        request = self.request
        if request.GET.get("error") in SIGNED_OUT_THERE:
            # A re-check found the person signed out (or disabled) at the provider: the library signed them out here.
            return flow.problem(
                request,
                provider=self.provider,
                title=_("You were signed out"),
                message=_(
                    "%(provider)s no longer has you signed in, so the portal signed you out too. Sign in again to "
                    "go on; if %(provider)s refuses, your account there has ended: ask the program team."
                )
                % {"provider": self.provider.name},
                status=401,
            )
        if request.GET.get("error"):
            # The provider said no (the person cancelled, or is not allowed to use this application there).
            detail = request.GET.get("error_description") or request.GET["error"]
            return flow.refused(
                request,
                self.provider,
                _("%(provider)s did not sign you in: %(detail)s")
                % {"provider": self.provider.name, "detail": detail[:300]},
            )
        if is_locked_out(request):
            return flow.refused(request, self.provider, _("Too many failed logins from this address. Try again later."))
        return flow.refused(request, self.provider)


class SignOutView(LogoutView):
    """Signs out of the portal (every session's data dropped, as Django's), then, for someone who signed in with
    the provider, sends them to its end-session endpoint (OpenID Connect RP-Initiated Logout) with the ID token as
    the hint and the login page to come back to: on a shared machine, "Sign in with…" then asks who they are
    again. A provider that does not say where, or does not answer, leaves them signed out of the portal alone."""

    def post(self, request, *args, **kwargs):
        id_token = request.session.get("oidc_id_token")
        signed_in_with = providers.get(request.session.get(flow.PROVIDER))
        response = super().post(request, *args, **kwargs)
        ending = None
        if id_token and signed_in_with is not None and signed_in_with.protocol == "oidc":
            ending = end_session_url(request, signed_in_with, id_token)
        return HttpResponseRedirect(ending) if ending else response


def end_session_url(request, signed_in_with: providers.Provider, id_token: str) -> str | None:
    try:
        endpoint = provider.metadata(signed_in_with).end_session_endpoint
    except provider.ProviderUnavailable:
        logger.warning("Signed out of the portal only: the provider is not answering")
        return None
    if not endpoint:
        return None
    query = {
        "id_token_hint": id_token,
        "client_id": signed_in_with.client_id,
        "post_logout_redirect_uri": request.build_absolute_uri(reverse(settings.LOGOUT_REDIRECT_URL)),
    }
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{urlencode(query)}"
