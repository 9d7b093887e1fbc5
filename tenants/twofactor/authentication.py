"""The browser session in the API, refused while it owes its second factor (a page would send it to enter its
code; a script gets 401 saying so). API tokens (tenants.tokens) are not affected."""

from django.utils.translation import gettext_lazy as _
from drf_spectacular.authentication import SessionScheme
from rest_framework import exceptions
from rest_framework.authentication import SessionAuthentication

from tenants.twofactor.services import owes_second_factor


class VerifiedSessionAuthentication(SessionAuthentication):
    def authenticate(self, request):
        result = super().authenticate(request)
        if result is not None and owes_second_factor(request._request):
            raise exceptions.AuthenticationFailed(
                _("This session has not entered its second-factor code yet: finish logging in, or use an API token.")
            )
        return result


class VerifiedSessionScheme(SessionScheme):
    """The OpenAPI schema's cookie scheme, for this subclass too."""

    target_class = "tenants.twofactor.authentication.VerifiedSessionAuthentication"
