"""The user guides' screenshots (docs/images/), taken from a running demo portal in English and Japanese.

    make run                                  # in another terminal: the demo program on http://127.0.0.1:8000
    .venv/bin/python scripts/docs_screenshots.py [--base http://127.0.0.1:8000] [--only NAME …]

Each shot is the top 1280 × 900 of a page (390 × 844 for the phone ones), signed in as a demo login (password
"demo"), Japanese through the `django_language` cookie. Needs Playwright and a Chromium (Debian's `chromium`).
"""

from __future__ import annotations

import argparse
import re
import shutil
from pathlib import Path

from playwright.sync_api import sync_playwright

OUT = Path(__file__).resolve().parent.parent / "docs" / "images"
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}

# name, login, path ("{cluster}" is the first cluster linked from the team's home), viewport
SHOTS = [
    ("tenant-home", "tenant1", "/orgs/sakura-lab/", DESKTOP),
    ("tenant-capacity-request", "tenant1", "/orgs/sakura-lab/capacity/new/", DESKTOP),
    ("tenant-workloads", "tenant1", "/workloads/", DESKTOP),
    ("tenant-cluster", "tenant1", "{cluster}", DESKTOP),
    ("tenant-support", "tenant1", "/support/", DESKTOP),
    ("tenant-home-phone", "tenant1", "/orgs/sakura-lab/", PHONE),
    ("manager-week", "manager", "/program/", DESKTOP),
    ("manager-usage", "manager", "/program/usage/", DESKTOP),
    ("manager-review-queue", "manager", "/program/capacity/review/", DESKTOP),
    ("manager-week-phone", "manager", "/program/", PHONE),
    ("support-queue", "support", "/support/?sort=queue", DESKTOP),
    ("support-incidents", "support", "/program/incidents/", DESKTOP),
]


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def log_in(page, base: str, username: str) -> None:
    page.goto(f"{base}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", "demo")
    page.locator("form button[type=submit]").last.click()
    page.wait_for_load_state("networkidle")


def first_cluster(page, base: str) -> str:
    page.goto(f"{base}/orgs/sakura-lab/")
    for href in page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))"):
        if re.fullmatch(r"/clusters/\d+/", href or ""):
            return href
    raise SystemExit("no cluster linked from /orgs/sakura-lab/: is the demo program loaded?")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="http://127.0.0.1:8000")
    parser.add_argument("--only", nargs="*", help="names of the shots to take (default: all)")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=["--disable-gpu"])
        try:
            for language in ("en", "ja"):
                for login in sorted({shot[1] for shot in SHOTS}):
                    context = browser.new_context(viewport=DESKTOP, locale=language)
                    host = re.sub(r"^https?://([^/:]+).*$", r"\1", args.base)
                    context.add_cookies([{"name": "django_language", "value": language, "domain": host, "path": "/"}])
                    page = context.new_page()
                    log_in(page, args.base, login)
                    cluster = None
                    for name, who, path, viewport in SHOTS:
                        if who != login or (args.only and name not in args.only):
                            continue
                        if "{cluster}" in path:
                            cluster = cluster or first_cluster(page, args.base)
                            path = path.format(cluster=cluster)
                        page.set_viewport_size(viewport)
                        page.goto(f"{args.base}{path}")
                        page.wait_for_load_state("networkidle")
                        page.wait_for_timeout(800)  # the charts' first draw
                        target = OUT / f"{name}-{language}.png"
                        page.screenshot(path=str(target), full_page=False)
                        print(f"{target.relative_to(OUT.parent.parent)}  {target.stat().st_size // 1024} KB  {path}")
                    context.close()
        finally:
            browser.close()


if __name__ == "__main__":
    main()
