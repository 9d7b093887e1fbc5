"""Sign-in through SAML 2.0 identity providers: a federation's (GakuNin, eduGAIN) or a company's.

pysaml2 runs the protocol (the AuthnRequest, the Response's signature, audience, destination, InResponseTo and
validity, decryption, through the xmlsec1 program); this package adds what is the portal's: the IdP metadata fetched,
checked and cached (`metadata.py`), the SP's own settings and metadata (`config.py`), the attributes read as the
claims tenants.sso.flow signs people in with (`claims.py`), and the three pages (`views.py`).

An SSO_PROVIDERS entry with "protocol": "saml" reads, in `provider.options`:
- `metadata_url` (fetched at the first sign-in, kept `metadata_hours`, default 6) or `metadata_file`: the IdP's or the
  federation's metadata; `metadata_cert`: a PEM file whose key must have signed it (GakuNin's, eduGAIN's);
- `idp_entity_id`: which IdP of that metadata; absent: its only IdP, or a page listing them by display name;
- `attributes`: portal claim → a SAML attribute name, or a list tried in order (defaults: claims.DEFAULT_ATTRIBUTES);
- `sp_entity_id` (default: the URL of the SP metadata page), `sp_key_file` and `sp_cert_file` (PEM: AuthnRequests
  are signed with that key, encrypted assertions decrypted, and the certificate published in the SP metadata).
"""
