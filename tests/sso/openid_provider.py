"""Runs the real OpenID provider of tests/sso/provider.js (oidc-provider, from npm) and walks its login pages
without a browser, for the tests that drive the portal's backend with the provider's own answers. Starting, waiting
and stopping as tests/servers.py does for every server the tests run."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urljoin

import requests

from tests.environment import unavailable
from tests.servers import Server, free_port, start

HERE = Path(__file__).resolve().parent
CLIENT_ID = "fmportal"
CLIENT_SECRET = "fmportal-test-secret"


def require_node_provider() -> None:
    """Skip without node or the npm packages (`npm ci` in tests/sso); in CI, where .ci/run installs them, fail."""
    missing = None
    if not shutil.which("node"):
        missing = "no node on PATH"
    elif not (HERE / "node_modules" / "oidc-provider").is_dir():
        missing = "tests/sso/node_modules is missing: run `npm ci` in tests/sso (.ci/run does)"
    if missing:
        unavailable(f"the OpenID provider cannot run: {missing}")


class OpenIdProvider:
    def __init__(self, server: Server):
        self.server = server
        self.issuer = server.url  # provider.js names itself by the address it listens on

    def account(self, subject: str, **claims) -> None:
        """Create or change the account `subject` logs in as (email, name, groups…)."""
        requests.put(f"{self.issuer}/__test__/accounts/{subject}", json=claims, timeout=5).raise_for_status()

    def configure(self, **config) -> None:
        """idTokenTtl (seconds), tokenDelayMs, idTokenAudience, noKid, discoveryIssuer; what is not given goes back
        to its default."""
        requests.put(f"{self.issuer}/__test__/config", json=config, timeout=5).raise_for_status()

    def backchannel_logout(self, subject: str, sid: str = "") -> object:
        """The provider sends its logout token for `subject` (and session `sid`) to the portal: the status the
        provider saw ("ok" for a 200), as its own back-channel logout does. The token sent is kept
        (`last_logout_token`), for a test to send it again."""
        answer = requests.post(f"{self.issuer}/__test__/backchannel/{subject}", json={"sid": sid}, timeout=10)
        answer.raise_for_status()
        self.last_logout_token = answer.json()["logout_token"]
        return answer.json()["status"]

    def sign_out(self, end_session_url: str, browser) -> str:
        """Confirm signing out on the provider's own page, as `browser`: where it then sends the person."""
        page = browser.get(end_session_url, allow_redirects=False, timeout=10)
        action = re.search(r'<form[^>]*action="([^"]+)"', page.text)
        xsrf = re.search(r'name="xsrf" value="([^"]+)"', page.text)
        assert page.status_code == 200 and action and xsrf, f"{page.status_code}: {page.text[:500]}"
        done = browser.post(urljoin(end_session_url, action.group(1)), data={"xsrf": xsrf.group(1), "logout": "yes"},
                            allow_redirects=False, timeout=10)  # fmt: skip
        assert done.status_code in (302, 303), f"{done.status_code}: {done.text[:500]}"
        return urljoin(end_session_url, done.headers["Location"])

    def stop(self) -> None:
        self.server.stop()

    def answer(self, authorization_url: str, subject: str, redirect_uri: str, browser=None) -> str:
        """Log in as `subject` on the provider's own pages and consent, as a browser would (`browser`: a
        requests.Session keeping the provider's cookies across calls; a new one by default): the URL the provider
        sends the person back to (the portal's callback with code, state and iss)."""
        browser = browser or requests.Session()
        url, method, data = authorization_url, "GET", None
        for _ in range(12):
            response = browser.request(method, url, data=data, allow_redirects=False, timeout=10)
            location = response.headers.get("Location")
            if location:
                location = urljoin(url, location)
                if location.startswith(redirect_uri):
                    return location
                url, method, data = location, "GET", None
                continue
            action = re.search(r'<form[^>]*action="([^"]+)"', response.text)
            assert response.status_code == 200 and action, f"{response.status_code} at {url}: {response.text[:500]}"
            url, method = urljoin(url, action.group(1)), "POST"
            if 'name="login"' in response.text:
                data = {"prompt": "login", "login": subject, "password": "any"}
            else:
                data = {"prompt": "consent"}
        raise AssertionError("the provider never sent the person back")


@contextmanager
def running_provider(*redirect_uris: str, backchannel_logout_uri: str = ""):
    """The provider, its client allowed these callbacks and, after signing out, each one's site's login page (and
    sent logout tokens at `backchannel_logout_uri`, when given)."""
    require_node_provider()
    port = free_port()
    logins = [urljoin(uri, "/login/") for uri in redirect_uris]
    env = {**os.environ, "PORT": str(port), "REDIRECT_URIS": ",".join(redirect_uris)}
    env["POST_LOGOUT_REDIRECT_URIS"] = ",".join(logins)
    env.update(CLIENT_ID=CLIENT_ID, CLIENT_SECRET=CLIENT_SECRET, BACKCHANNEL_LOGOUT_URI=backchannel_logout_uri)
    with tempfile.TemporaryDirectory(prefix="openid-provider-") as directory:
        server = start(
            "the OpenID provider",
            ["node", str(HERE / "provider.js")],
            port=port,
            ready="/.well-known/openid-configuration",  # served once the provider handles requests
            log=Path(directory) / "provider.log",
            cwd=HERE,
            env=env,
        )
        try:
            yield OpenIdProvider(server)
        finally:
            server.stop()
