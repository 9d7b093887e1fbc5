import os
import shutil
from pathlib import Path

import pytest
from django.conf import settings

from tests.environment import unavailable

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
ARTIFACTS = Path(settings.BASE_DIR) / "test-artifacts"
# Without these, Chromium keeps trying to reach Google's hosts, which this network refuses.
CHROMIUM_ARGS = [
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def browser():
    if not shutil.which(CHROMIUM):
        unavailable(f"no Chromium at {CHROMIUM}: apt-get install chromium (.ci/run installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


# Every page of every browser test runs under the portal's Content-Security-Policy and must not break it: a refused
# script, style, image, request or form target is a violation the test fails on, whatever it was testing. The
# browser reports each one twice (a `securitypolicyviolation` event in the page, a console message); both are
# recorded, so one missed by the other (a worker's, a report the page left before dispatching) still counts. A
# Permissions-Policy header the browser cannot read (an unknown feature) is logged there too, and counts as well.
# Under the policy, give wait_for_function a function ("() => …"): an expression string is polled through eval,
# which the policy refuses.
WATCH_SECURITY_POLICY = """document.addEventListener("securitypolicyviolation", (e) =>
    window.__portalSecurityPolicyViolation(
        `${e.effectiveDirective} refused ${e.blockedURI || "(inline)"} at ${e.sourceFile || "?"}:${e.lineNumber}`));"""
POLICY_MESSAGES = ("Content Security Policy", "Content-Security-Policy", "Permissions-Policy")


def watch_security_policy(context, violations: list[str]) -> None:
    """Record every policy violation in `context`'s pages into `violations`."""
    context.expose_binding(
        "__portalSecurityPolicyViolation", lambda source, text: violations.append(f"{source['page'].url}: {text}")
    )
    context.add_init_script(WATCH_SECURITY_POLICY)
    context.on(
        "console",
        lambda message: (
            violations.append(f"{message.page.url if message.page else '?'}: {message.text}")
            if any(words in message.text for words in POLICY_MESSAGES)
            else None
        ),
    )


@pytest.fixture(autouse=True)
def security_policy_violations(request, monkeypatch):
    """Every browser context a test opens (the `page` fixture's or its own) is watched; at the end the test fails
    on any violation it saw."""
    violations: list[str] = []
    if "browser" not in request.fixturenames:
        yield violations
        return
    browser = request.getfixturevalue("browser")
    new_context = browser.new_context

    def watched_context(*args, **kwargs):
        context = new_context(*args, **kwargs)
        watch_security_policy(context, violations)
        return context

    monkeypatch.setattr(browser, "new_context", watched_context)
    yield violations
    assert violations == [], "Content-Security-Policy or Permissions-Policy violations:\n" + "\n".join(violations)


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 860}, locale="en-US")
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()


@pytest.fixture
def screenshot(page):
    ARTIFACTS.mkdir(exist_ok=True)

    def take(name: str) -> Path:
        path = ARTIFACTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


# axe-core (Deque's accessibility rules engine, pinned in tests/browser/package.json, installed by `.ci/run`): a page's
# serious and critical violations, each with the first elements it names.
AXE = Path(__file__).parent / "node_modules" / "axe-core" / "axe.min.js"
SERIOUS = """async () => (await axe.run(document, {resultTypes: ['violations']})).violations
    .filter(v => ['serious', 'critical'].includes(v.impact))
    .map(v => v.id + ': ' + v.nodes.map(n => n.target.join(' ')).slice(0, 3).join(', '))"""


@pytest.fixture
def axe():
    """axe-core's source, to `page.evaluate` (not a <script> tag: the Content-Security-Policy refuses inline ones)."""
    if not AXE.exists():
        unavailable(f"no axe-core at {AXE}: (cd tests/browser && npm ci) — .ci/run installs it")
    return AXE.read_text()
