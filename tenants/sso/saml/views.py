"""The SAML pages: the start of a sign-in (an AuthnRequest sent to the IdP by HTTP-Redirect), the Assertion Consumer
Service the IdP's answer is posted to, and the SP metadata a federation registers. What comes after a verified answer
(the account, invitations, organizations, the pages saying why not) is tenants.sso.flow's, as for OpenID Connect."""

from __future__ import annotations

import html
import logging
import re

from django.conf import settings
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST
from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.metadata import create_metadata_string
from saml2.response import StatusError

from tenants.sso import flow, providers
from tenants.sso.saml import config, metadata
from tenants.sso.saml.claims import claims_of

logger = logging.getLogger("portal.sso")

REQUESTS = "saml_requests"  # session: each AuthnRequest under way → {"provider", "idp", "next"}
MAX_STARTED = 20
CONTINUED = "portal_continued"  # the ACS's form field: the answer, posted again from the portal's own page


def _provider(key: str) -> providers.Provider:
    found = providers.get(key)
    if found is None or found.protocol != "saml":
        raise Http404(_("No such way to sign in here."))
    return found


@never_cache
@require_GET
def login(request, provider: str):
    """To the IdP with an AuthnRequest, remembered in the session for its answer. A federation's metadata with many
    IdPs and no `idp_entity_id`: first a page to choose one (?idp=<entity id> then)."""
    chosen = _provider(provider)
    next_url = request.GET.get("next", "")
    try:
        found = metadata.store(chosen)
        known = set(found.identity_providers())
    except metadata.MetadataUnavailable as error:
        logger.warning("SAML sign-in with %s: metadata unavailable: %s", chosen.key, error)
        return flow.unavailable(request, chosen)
    idp = chosen.options.get("idp_entity_id") or request.GET.get("idp") or (min(known) if len(known) == 1 else None)
    if idp is None:
        return _choose(request, chosen, next_url)
    if idp not in known:
        if chosen.options.get("idp_entity_id"):
            logger.warning("SAML provider %s: idp_entity_id %r is not in its metadata", chosen.key, idp)
            return flow.unavailable(request, chosen)
        raise Http404(_("No such way to sign in here."))
    if not config.redirect_sso_url(found, idp):
        logger.warning("SAML IdP %s offers no HTTP-Redirect sign-in service", idp)
        return flow.unavailable(request, chosen)
    request_id, info = config.client(request, chosen).prepare_for_authenticate(
        entityid=idp, binding=BINDING_HTTP_REDIRECT
    )
    started = dict(list(request.session.get(REQUESTS, {}).items())[-(MAX_STARTED - 1) :])
    request.session[REQUESTS] = {**started, request_id: {"provider": chosen.key, "idp": idp, "next": next_url}}
    return HttpResponseRedirect(dict(info["headers"])["Location"])


def _choose(request, chosen: providers.Provider, next_url: str):
    language = (get_language() or "en").split("-")[0]
    base = reverse("saml-login", args=[chosen.key])
    choices = [
        (name, f"{base}?{urlencode({'idp': entity_id, **({'next': next_url} if next_url else {})})}")
        for entity_id, name in metadata.identity_providers(chosen, language)
    ]
    return render(request, "tenants/sso/saml_choose.html", {"provider_name": chosen.name, "choices": choices})


@csrf_exempt  # the IdP's page posts here; the answer's signature and InResponseTo are what protect it
@never_cache
@require_POST
def acs(request, provider: str):
    """The IdP's answer (HTTP-POST binding): verified by pysaml2 against the IdP's metadata and the request this
    session made, then the person is signed in by tenants.sso.flow."""
    chosen = _provider(provider)
    answer = request.POST.get("SAMLResponse", "")
    if settings.SESSION_COOKIE_NAME not in request.COOKIES and not request.POST.get(CONTINUED):
        # The IdP is another site, and the session cookie (SameSite=Lax) is not sent with its POST: the portal's
        # own page posts the answer again, with the cookie (portal.js submits it; a button without scripts).
        context = {"provider_name": chosen.name, "response": answer, "relay_state": request.POST.get("RelayState")}
        return render(request, "tenants/sso/saml_continue.html", {**context, "continued": CONTINUED})
    started = request.session.get(REQUESTS, {})
    outstanding = {rid: start["next"] for rid, start in started.items() if start.get("provider") == chosen.key}
    if not answer or not outstanding:
        return flow.refused(request, chosen)
    try:
        client = config.client(request, chosen)
    except metadata.MetadataUnavailable as error:
        logger.warning("SAML sign-in with %s: metadata unavailable: %s", chosen.key, error)
        return flow.unavailable(request, chosen)
    try:
        verified = client.parse_authn_request_response(answer, BINDING_HTTP_POST, outstanding=outstanding)
    except StatusError as error:  # the IdP said no: the person cancelled, or may not use the portal there
        logger.info("SAML sign-in with %s: the IdP answered %r", chosen.key, error)
        message = _("%(provider)s did not sign you in: %(detail)s") % {"provider": chosen.name, "detail": _why(error)}
        return flow.refused(request, chosen, message)
    except Exception as error:  # noqa: BLE001 pysaml2 raises many kinds (signature, time, audience, XML): each a no
        logger.warning("SAML sign-in with %s refused: %r", chosen.key, error)
        return flow.refused(request, chosen)
    start = started.get(getattr(verified, "in_response_to", None) or "")
    # Who vouches for the person is the signed assertion's issuer; the Response's own Issuer is not signed when only
    # the assertion is, so it must agree, and both must be the IdP this session asked.
    issuer = _assertion_issuer(verified)
    outer = verified.issuer() if verified is not None else None
    if start is None or issuer is None or issuer != start["idp"] or (outer and outer != issuer):
        logger.warning("SAML sign-in with %s refused: an answer from %r, not the IdP asked", chosen.key, issuer)
        return flow.refused(request, chosen)
    request.session[REQUESTS] = {rid: s for rid, s in started.items() if rid != verified.in_response_to}  # once
    sole = len(set(metadata.store(chosen).identity_providers())) == 1
    claims = claims_of(chosen, issuer, verified.assertion, sole=sole)
    if not claims.get("sub"):
        logger.warning("SAML sign-in with %s: %s released no persistent identifier", chosen.key, issuer)
        message = _(
            "%(provider)s signed you in but did not send an identifier the portal can recognise you by "
            "(eduPersonPrincipalName or a persistent NameID). Ask your institution to release it to the portal."
        ) % {"provider": chosen.name}
        return flow.refused(request, chosen, message)
    return flow.finish(request, chosen, claims, start.get("next", ""))


def _assertion_issuer(verified) -> str | None:
    assertion = getattr(verified, "assertion", None)
    issuer = getattr(assertion, "issuer", None)
    return (issuer.text or "").strip() or None if issuer is not None else None


def _why(error: StatusError) -> str:
    """The IdP's StatusMessage, else its status code's name (AuthnFailed, RequestDenied…): pysaml2's message
    quotes the whole Status element."""
    said = re.search(r"<(?:\w+:)?StatusMessage>([^<]{1,300})</", str(error))
    return html.unescape(said.group(1)) if said else error.__class__.__name__.removeprefix("Status") or "—"


@require_GET
def sp_metadata(request, provider: str):
    """The SP metadata a federation or an IdP registers: entity id, ACS, and the certificate when one is set (the
    metadata then signed with its key)."""
    chosen = _provider(provider)
    pair = config.keypair(chosen)
    document = create_metadata_string(
        None,
        config=config.sp_config(request, chosen),
        cert=pair[1] if pair else None,
        keyfile=pair[0] if pair else None,
        sign=pair is not None,
    )
    return HttpResponse(document, content_type="application/samlmetadata+xml")
