"""Absolute links for messages that leave the portal (emails): they have no request to build a URL on."""

from django.conf import settings
from django.urls import reverse


def portal_url(viewname: str, *args) -> str:
    """The full address of a page, e.g. portal_url("support:detail", 7) → https://portal.example/support/7/."""
    return settings.PORTAL_URL + reverse(viewname, args=args)
