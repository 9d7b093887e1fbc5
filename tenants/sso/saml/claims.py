"""A verified SAML assertion read as the claims tenants.sso.flow signs people in with.

The attributes are read by their Name as sent (the urn:oid:… of the eduPerson and X.500 schemas, as GakuNin and
eduGAIN release them) and by their FriendlyName, so a provider's `attributes` may say either. `email_verified` is
never set here: SAML has no such thing, and tenants.sso.services.normalize applies the provider's `trust_email`.
"""

from __future__ import annotations

from saml2.saml import NAMEID_FORMAT_PERSISTENT

from tenants.sso.providers import Provider

EPPN = "urn:oid:1.3.6.1.4.1.5923.1.1.1.6"  # eduPersonPrincipalName
SUBJECT_ID = "urn:oasis:names:tc:SAML:attribute:subject-id"
PAIRWISE_ID = "urn:oasis:names:tc:SAML:attribute:pairwise-id"
UID = "urn:oid:0.9.2342.19200300.100.1.1"
# Portal claim → the attributes it is read from, the first one sent winning. preferred_username (a label: see
# tenants.sso.services._free_username), unless `attributes` names one: eppn's local part, else uid, else the mail's.
DEFAULT_ATTRIBUTES: dict[str, list[str]] = {
    "sub": [EPPN, "eduPersonPrincipalName", SUBJECT_ID, PAIRWISE_ID],
    "email": ["urn:oid:0.9.2342.19200300.100.1.3", "mail", "email"],
    "given_name": ["urn:oid:2.5.4.42", "givenName"],
    "family_name": ["urn:oid:2.5.4.4", "sn", "surname"],
    "name": ["urn:oid:2.16.840.1.113730.3.1.241", "displayName"],
    "groups": ["urn:oid:1.3.6.1.4.1.5923.1.5.1.1", "isMemberOf"],
}
SINGLE = ("sub", "email", "given_name", "family_name", "name", "preferred_username")


def released(assertion) -> dict[str, list[str]]:
    """Every attribute's text values, under its Name and under its FriendlyName."""
    found: dict[str, list[str]] = {}
    for statement in assertion.attribute_statement or []:
        for attribute in statement.attribute or []:
            values = [v.text.strip() for v in attribute.attribute_value or [] if isinstance(v.text, str) and v.text]
            for name in {attribute.name, attribute.friendly_name} - {None, ""}:
                found.setdefault(name, []).extend(values)
    return found


def attribute_names(provider: Provider) -> dict[str, list[str]]:
    """The provider's `attributes` over the defaults: a name or a list of names per claim."""
    names = dict(DEFAULT_ATTRIBUTES)
    for claim, given in (provider.options.get("attributes") or {}).items():
        names[str(claim)] = [given] if isinstance(given, str) else [str(name) for name in given]
    return names


def persistent_name_id(assertion) -> str | None:
    name_id = getattr(getattr(assertion, "subject", None), "name_id", None)
    if name_id is not None and name_id.format == NAMEID_FORMAT_PERSISTENT and name_id.text:
        return name_id.text.strip()
    return None


def vouched_for(provider: Provider, issuer: str, sole: bool) -> bool:
    """Whether the provider's group rules and `trust_email` apply to what the IdP `issuer` releases: the IdP it is
    fixed to (`idp_entity_id`), the only IdP of its metadata (`sole`: a company's own IdP), or one of its
    `trusted_idps`. Any other IdP of a federation's metadata signs people
    in as themselves, but its groups place no one and its addresses count as unverified: an IdP of the federation
    cannot make its users staff, an organization's admins, or the invitee of an address in another domain."""
    fixed = provider.options.get("idp_entity_id")
    if fixed:
        return issuer == fixed
    return sole or issuer in (provider.options.get("trusted_idps") or [])


def claims_of(provider: Provider, issuer: str, assertion, sole: bool = False) -> dict:
    """The claims of a verified assertion from the IdP `issuer`. No `sub` when it released no persistent identifier
    (eduPersonPrincipalName, subject-id, pairwise-id or a persistent NameID): a transient NameID is not a person.
    An IdP the provider does not vouch for (`vouched_for`) has its groups dropped and its address unverified."""
    attributes = released(assertion)
    claims: dict = {"iss": issuer}
    for claim, names in attribute_names(provider).items():
        values = next((attributes[name] for name in names if attributes.get(name)), [])
        if claim in SINGLE:
            if values:
                claims[claim] = values[0]
        else:
            claims[claim] = values
    if provider.groups_claim not in claims:  # `groups_claim` naming an attribute itself (eduPersonEntitlement)
        claims[provider.groups_claim] = attributes.get(provider.groups_claim, [])
    if not claims.get("sub"):
        name_id = persistent_name_id(assertion)
        if name_id:
            claims["sub"] = name_id
    if not vouched_for(provider, issuer, sole):
        claims[provider.groups_claim], claims["email_verified"] = [], False
    if not claims.get("preferred_username"):
        eppn = next(iter(attributes.get(EPPN) or attributes.get("eduPersonPrincipalName") or []), "")
        uid = next(iter(attributes.get(UID) or attributes.get("uid") or []), "")
        local = eppn.partition("@")[0] or uid or (claims.get("email") or "").partition("@")[0]
        if local:
            claims["preferred_username"] = local
    claims.pop("email_verified", None)
    return claims
