"""A session that owes its second factor reaches only the pages that settle it: every other page sends it to enter
its code (or to set up an app, if the account has none yet). The API answers for itself (authentication.py)."""

from __future__ import annotations

from functools import cached_property

from django.conf import settings
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.http import urlencode
from django_htmx.http import HttpResponseClientRedirect

from tenants.twofactor.services import has_second_factor, owes_second_factor


class SecondFactorMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    @cached_property
    def open_paths(self) -> tuple[str, ...]:
        pages = ("two-factor-verify", "two-factor-setup", "logout", "set_language", "healthz")
        return (*(reverse(name) for name in pages), "/" + settings.STATIC_URL.lstrip("/"), "/api/")

    def __call__(self, request):
        if not owes_second_factor(request):
            return self.get_response(request)
        request.second_factor_owed = True  # the top bar shows no links it could not follow yet
        if request.path.startswith(self.open_paths):
            return self.get_response(request)
        page = "two-factor-verify" if has_second_factor(request.user) else "two-factor-setup"
        url = reverse(page)
        if request.method == "GET":
            url += "?" + urlencode({"next": request.get_full_path()})
        if getattr(request, "htmx", False):
            return HttpResponseClientRedirect(url)
        return redirect(url)
