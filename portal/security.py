"""Permissions-Policy on every response: the browser features no page of the portal uses are refused, to the portal
itself and to anything it could ever embed (settings.PERMISSIONS_POLICY). Django sets the other security headers
(SecurityMiddleware, ContentSecurityPolicyMiddleware) but has no setting for this one."""

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse


def permissions_policy(features: dict[str, list[str]]) -> str:
    """The header's value: `camera=(), geolocation=(self)`; an empty list refuses the feature to every origin."""
    return ", ".join(f"{feature}=({' '.join(origins)})" for feature, origins in features.items())


class PermissionsPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if settings.PERMISSIONS_POLICY:
            response.headers.setdefault("Permissions-Policy", permissions_policy(settings.PERMISSIONS_POLICY))
        return response
