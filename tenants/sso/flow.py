"""One sign-in with an institution, whatever its protocol: OpenID Connect (tenants/sso/views.py, through
mozilla-django-oidc's backend) and SAML (tenants/sso/saml/) both hand the person's verified claims to `sign_in`, and
show `failure`'s page when it cannot go on.

An invitation link opened before signing in is kept in the session (`remember_invitation`): the sign-in that follows
joins its organization when the invitation is addressed to the person's verified address, even if no group of
theirs places them anywhere; the invitation is the permission to join.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.http import HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _

from tenants.members.models import Invitation
from tenants.sso import provider as discovery
from tenants.sso import recheck, services, sessions
from tenants.sso.providers import Provider

logger = logging.getLogger("portal.sso")

INVITATION = "sso_invitation"  # session: the key of the invitation link the person opened
PROVIDER = sessions.PROVIDER  # session: the provider the person signed in with (sign-out, re-checks)
NEXT = "sso_next"  # session: where to go once signed in, when sign-in decided it (an organization joined)
BACKEND = "tenants.sso.backend.OidcBackend"  # keeps the session's user, whatever the protocol signed them in


def remember_invitation(request, key: str) -> None:
    request.session[INVITATION] = key


def session_invitation(request) -> Invitation | None:
    key = request.session.get(INVITATION)
    return Invitation.find(key, Invitation.objects.select_related("organization")) if key else None


def sign_in(request, provider: Provider, claims: dict):
    """The user these verified claims are (services.sign_in); the organization joined from the session's
    invitation, if any, is greeted and becomes where the person lands."""
    user, joined = services.sign_in(provider=provider, claims=claims, invitation=session_invitation(request))
    request.session[PROVIDER] = provider.key
    recheck.mark_checked(request.session)
    if joined is not None:
        request.session.pop(INVITATION, None)
        request.session[NEXT] = reverse("org-home", args=[joined.organization.slug])
        messages.success(
            request,
            _("Welcome to %(org)s: you joined as %(role)s.")
            % {"org": joined.organization.name, "role": joined.get_role_display().lower()},
        )
    return user


def landing(request, default: str) -> str:
    """Where a signed-in person goes: the organization sign-in joined, else `default` when it is the portal's."""
    joined = request.session.pop(NEXT, None)
    if joined:
        return joined
    safe = url_has_allowed_host_and_scheme(
        default, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return default if default and safe else reverse(settings.LOGIN_REDIRECT_URL)


def finish(request, provider: Provider, claims: dict, next_url: str = ""):
    """Sign in with claims a protocol view verified (SAML's): the person's page, or the page saying why not."""
    try:
        user = sign_in(request, provider, claims)
    except services.SignInRefused as error:
        return failure(request, provider, error)
    login(request, user, backend=BACKEND)
    request.session[PROVIDER] = provider.key
    return HttpResponseRedirect(landing(request, next_url))


def problem(request, *, title: str, message: str, status: int, provider: Provider | None = None, **extra):
    """The page a person sees instead of the portal when sign-in stops: what happened and whom to ask."""
    context = {
        "title": title,
        "message": message,
        "provider_name": provider.name if provider else _("your institution"),
        "contact_email": settings.PROGRAM_CONTACT_EMAIL,
        "placement": None,
        "email": "",
        **extra,
    }
    return render(request, "tenants/sso/problem.html", context, status=status)


def unavailable(request, provider: Provider | None, error: Exception | None = None):
    name = provider.name if provider else _("your institution")
    if isinstance(error, discovery.ProviderMisconfigured):
        return problem(
            request,
            provider=provider,
            title=_("Sign-in with %(provider)s is misconfigured") % {"provider": name},
            message=_(
                "%(provider)s answers, but names itself %(named)s where the portal is set up for %(expected)s, so "
                "its answers cannot be trusted. Nothing was changed. This is for the program team to mend: tell them "
                "this message."
            )
            % {"provider": name, "named": error.named, "expected": error.expected},
            status=502,
        )
    return problem(
        request,
        provider=provider,
        title=_("%(provider)s is not answering") % {"provider": name},
        message=_(
            "The portal could not reach %(provider)s to sign you in. Nothing was changed. Try again in a few "
            "minutes; if it goes on, tell the program team."
        )
        % {"provider": name},
        status=503,
    )


def refused(request, provider: Provider | None, message: str | None = None):
    name = provider.name if provider else _("your institution")
    return problem(
        request,
        provider=provider,
        title=_("Sign-in not completed"),
        message=message
        or _(
            "The answer from %(provider)s could not be verified, so you were not signed in and nothing was changed. "
            "This happens when a sign-in is started in another window or left open too long. Start again."
        )
        % {"provider": name},
        status=400,
    )


def failure(request, provider: Provider | None, error: Exception):
    """The page for a sign-in that cannot go on, by what stopped it."""
    name = provider.name if provider else _("your institution")
    if isinstance(error, services.NotPlaced):
        logger.info("Sign-in of %s: %s", error.email or "someone", error.reason)
        invitation = error.invitation
        if invitation is not None and invitation.state == "active":
            return problem(
                request,
                provider=provider,
                title=_("This invitation is for someone else"),
                message=_(
                    "The invitation you opened is for %(invited)s. %(provider)s did not confirm that this address "
                    "is yours, so it cannot be accepted with this sign-in. Sign in with the account of that address, "
                    "or ask the organization's admins to invite an address %(provider)s confirms."
                )
                % {"invited": invitation.email, "provider": name},
                status=403,
                email=error.email,
            )
        return problem(
            request,
            provider=provider,
            title=_("You are not yet in any organization of the program"),
            message=_(
                "%(provider)s signed you in, but none of your groups there gives you access to an organization "
                "of the program. Ask your organization's admin or the program team to invite you, then open the "
                "invitation's link and sign in from there."
            )
            % {"provider": name},
            status=403,
            placement=error.placement,
            email=error.email,
        )
    if isinstance(error, services.AccountDisabled):
        return problem(
            request,
            provider=provider,
            title=_("Your account is deactivated"),
            message=_("Your account in the portal has been deactivated. Ask the program team."),
            status=403,
        )
    if isinstance(error, services.EmailTaken):
        return problem(
            request,
            provider=provider,
            title=_("An account with your address already exists"),
            message=_(
                "The portal already has an account for %(email)s, signed in another way (a password, or another "
                "provider). No second account was made. Ask the program team to link your %(provider)s sign-in to "
                "that account; until then, sign in as you did before."
            )
            % {"email": error.email, "provider": name},
            status=409,
        )
    if isinstance(error, discovery.ProviderUnavailable):
        return unavailable(request, provider, error)
    logger.warning("Sign-in refused: %s", error)
    return refused(request, provider)
