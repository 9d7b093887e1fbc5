"""Every response carries the browser-hardening headers (docs/operations/security.md): a strict
Content-Security-Policy (nothing inline, no eval, no other origin), Referrer-Policy, Permissions-Policy and
Cross-Origin-Opener-Policy. What the browser then refuses on each page is the browser tests' concern
(tests/browser/test_content_security.py); here, what the server sends, and that no template brings the inline
code the policy would refuse back."""

import re
from pathlib import Path

import pytest
from django.conf import settings

from tests.test_settings import GOOD, load_settings

STRICT = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self'",
    "img-src": "'self' data:",
    "font-src": "'self'",
    "connect-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'none'",
    "frame-ancestors": "'none'",
    "form-action": "'self'",
}


def policy(response) -> dict[str, str]:
    header = response.headers["Content-Security-Policy"]
    return dict((part.strip().split(" ", 1) + [""])[:2] for part in header.split(";"))


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("path", "logged_in"),
    [("/login/", False), ("/program/", True), ("/api/docs/", True), ("/admin/", True), ("/no-such-page/", True)],
)
def test_pages_carry_the_strict_policy_and_the_other_headers(client, django_user_model, path, logged_in):
    if logged_in:
        client.force_login(django_user_model.objects.create_superuser("root", "root@example.jp", "x"))
    response = client.get(path, follow=False)
    assert policy(response) == STRICT
    header = response.headers["Content-Security-Policy"]
    assert "unsafe" not in header and "nonce-" not in header  # nothing inline is allowed, not even by a nonce
    assert response.headers["Referrer-Policy"] == "same-origin"
    assert response.headers["Cross-Origin-Opener-Policy"] == "same-origin"
    assert "camera=()" in response.headers["Permissions-Policy"]
    assert "geolocation=()" in response.headers["Permissions-Policy"]
    assert response.headers["X-Frame-Options"] == "DENY"


def test_the_api_documentation_script_is_a_file_of_its_own(admin_client):
    """Swagger UI's start-up script comes from ?script (the split view), so the page needs no inline script."""
    page = admin_client.get("/api/docs/")
    assert re.search(r'<script src="/api/docs/\?script=?"', page.text), page.text
    assert "<style" not in page.text
    script = admin_client.get("/api/docs/?script")
    assert script.status_code == 200
    assert script.headers["Content-Type"].startswith("application/javascript")
    assert "SwaggerUIBundle(" in script.text


def test_the_policy_allows_forms_to_post_to_the_provider_it_signs_out_at():
    """Signing out of an institution's account redirects the logout form to its provider (RP-Initiated Logout), and
    Chromium holds a form's redirects to form-action: the issuer's origin is allowed, nothing more of it."""
    read = load_settings(
        {
            **GOOD,
            "OIDC_ISSUER_URL": "https://idp.example.ac.jp:8443/realms/fm",
            "OIDC_CLIENT_ID": "p",
            "OIDC_CLIENT_SECRET": "s",
        },
        show="*settings.SECURE_CSP['form-action']",
    )
    assert read.stdout.strip() == "'self' https://idp.example.ac.jp:8443", read.stderr


def test_report_only_is_off_unless_a_rollout_turns_it_on():
    assert settings.SECURE_CSP_REPORT_ONLY == {}


TEMPLATE_DIRS = [Path(settings.BASE_DIR) / folder for folder in ("templates", "tenants", "workloads", "portal")]
EMAILS = ("/email/",)  # an email is read in a mail client, not under the portal's headers
INLINE = re.compile(
    r"""\sstyle=|<style|\son[a-z]+=|<script(?![^>]*\bsrc=)(?![^>]*type="application/json")|javascript:"""
)


def test_no_template_brings_inline_code_back():
    """What the policy refuses, found before a browser test would: style attributes, <style> blocks, inline event
    handlers (onclick=…), inline scripts and javascript: links. Charts get their heights and colours through
    classes and the CSSOM, bars are SVG, confirmations are data-confirm (static/js/portal.js)."""
    found = []
    for folder in TEMPLATE_DIRS:
        for path in folder.rglob("*.html"):
            if any(part in str(path) for part in EMAILS):
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if INLINE.search(re.sub(r"\{#.*?#\}", "", line)):
                    found.append(f"{path.relative_to(settings.BASE_DIR)}:{number}: {line.strip()[:100]}")
    assert found == []
