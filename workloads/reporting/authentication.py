"""`Authorization: Token fmc_…`: a cluster's reporter token, accepted by the ingest endpoints only.

Anywhere else the header goes to tenants.tokens.authentication, which knows no fmc_ key ("Invalid token."), so
a reporter token leaking from a head node reads nothing and writes nowhere but its own cluster's reports.
"""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser
from django.utils.translation import gettext_lazy as _
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.plumbing import build_bearer_security_scheme_object
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication, get_authorization_header

from tenants.tokens.services import note_use
from workloads.reporting.models import ReporterToken

KEY_START = f"{ReporterToken.KIND}_".encode()
REISSUE = _("issue a new one on the cluster's page")


class ReporterTokenAuthentication(TokenAuthentication):
    keyword = "Token"

    def authenticate(self, request):
        words = get_authorization_header(request).split()
        if len(words) != 2 or words[0].lower() != b"token" or not words[1].startswith(KEY_START):
            return None  # not a reporter token: the API's own token or session authentication decides
        return self.authenticate_credentials(words[1].decode(errors="replace"))

    def authenticate_credentials(self, key: str):
        token = ReporterToken.find(key, ReporterToken.objects.select_related("organization"))
        if token is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        if token.revoked_at is not None:
            raise exceptions.AuthenticationFailed(_("This reporter token was revoked: %(what)s.") % {"what": REISSUE})
        if token.is_expired():
            raise exceptions.AuthenticationFailed(_("This reporter token has expired: %(what)s.") % {"what": REISSUE})
        note_use(token)
        # No person acts: the request is the cluster's reporter, and the token says which cluster.
        return (AnonymousUser(), token)


class ReporterTokenScheme(OpenApiAuthenticationExtension):
    """The schema names the reporter token apart from the API token: same header, another key."""

    target_class = ReporterTokenAuthentication
    name = "reporterToken"

    def get_security_definition(self, auto_schema):
        scheme = build_bearer_security_scheme_object(header_name="Authorization", token_prefix="Token")
        return {**scheme, "description": "A cluster's reporter token (fmc_…): its own cluster's ingest endpoints only."}
