"""`Authorization: Token <key>` for the API, with the hashed, expiring tokens of this package. The header
format is DRF's TokenAuthentication's, whose parsing (and its OpenAPI security scheme) this keeps."""

from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from tenants.tokens import services
from tenants.tokens.models import ApiToken


class ApiTokenAuthentication(TokenAuthentication):
    keyword = "Token"

    def authenticate_credentials(self, key: str):
        token = ApiToken.find(key, ApiToken.objects.select_related("user", "user__service_account"))
        if token is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        if token.revoked_at is not None:
            raise exceptions.AuthenticationFailed(_("This token was revoked."))
        if token.is_expired():
            raise exceptions.AuthenticationFailed(_("This token has expired: create a new one."))
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        services.note_use(token)
        return (token.user, token)
