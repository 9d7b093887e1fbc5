"""The portal as a SAML service provider, per provider: its entity id, its Assertion Consumer Service, its key, and
pysaml2's client made from them with the IdP metadata (tenants/sso/saml/metadata.py)."""

from __future__ import annotations

from django.urls import reverse
from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.client import Saml2Client
from saml2.config import SPConfig

from tenants.sso.providers import Provider
from tenants.sso.saml import metadata

CLOCK_SKEW_SECONDS = 60  # leeway on IssueInstant, NotBefore and NotOnOrAfter: the IdP's clock and ours


def sp_entity_id(request, provider: Provider) -> str:
    """The SP's name at the IdP: `sp_entity_id`, else the URL of its metadata page (what federations register)."""
    return provider.options.get("sp_entity_id") or request.build_absolute_uri(
        reverse("saml-metadata", args=[provider.key])
    )


def acs_url(request, provider: Provider) -> str:
    return request.build_absolute_uri(reverse("saml-acs", args=[provider.key]))


def keypair(provider: Provider) -> tuple[str, str] | None:
    """The SP's (key file, certificate file), PEM, when both are set."""
    key, cert = provider.options.get("sp_key_file"), provider.options.get("sp_cert_file")
    return (str(key), str(cert)) if key and cert else None


def sp_config(request, provider: Provider) -> SPConfig:
    """pysaml2's configuration of the SP, without IdP metadata (the SP metadata page needs none)."""
    pair = keypair(provider)
    settings = {
        "entityid": sp_entity_id(request, provider),
        "xmlsec_binary": metadata.xmlsec_binary(),
        "accepted_time_diff": CLOCK_SKEW_SECONDS,
        "allow_unknown_attributes": True,
        "service": {
            "sp": {
                "name": provider.name,
                "endpoints": {"assertion_consumer_service": [(acs_url(request, provider), BINDING_HTTP_POST)]},
                "allow_unsolicited": False,  # every answer must be to a request this browser's session made
                # Shibboleth IdPs (most of GakuNin's) sign the response, others the assertion: either will do, and
                # an answer signed nowhere is refused.
                "want_response_signed": False,
                "want_assertions_signed": False,
                "want_assertions_or_response_signed": True,
                "authn_requests_signed": pair is not None,
            }
        },
    }
    if pair is not None:
        settings |= {
            "key_file": pair[0],
            "cert_file": pair[1],
            "encryption_keypairs": [{"key_file": pair[0], "cert_file": pair[1]}],
        }
    return SPConfig().load(settings)


def client(request, provider: Provider) -> Saml2Client:
    """pysaml2's SP client for `provider`, with its IdP metadata (metadata.MetadataUnavailable without it)."""
    config = sp_config(request, provider)
    config.metadata = metadata.store(provider)
    return Saml2Client(config=config)


def redirect_sso_url(found, idp_entity_id: str) -> str | None:
    """The IdP's SingleSignOnService for the HTTP-Redirect binding (the only one used: a POST towards the IdP would
    need a script the portal's Content-Security-Policy does not run)."""
    services = found.single_sign_on_service(idp_entity_id, BINDING_HTTP_REDIRECT)
    return services[0]["location"] if services else None
