"""Every page a person lands on, in Chromium at 1280 px, in English and Japanese, as program staff and as a tenant:
no page scrolls sideways, no table or chart overflows its card (a wide table scrolls inside its own box), and the
top bar is one line. The pages are found by walking the URL conf (every route that takes no argument, or only the
org slug), so a new page is measured without anyone remembering to add it. Screenshots in test-artifacts/."""

from datetime import date, timedelta

import pytest
from django.core.management import call_command
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from tests.browser.conftest import SERIOUS
from tests.browser.test_usage import OVERFLOWING, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("catalog")]

SKIPPED_NAMESPACES = {"admin"}
# Not pages a person reads in the browser: sign-in plumbing, files, machine endpoints.
NOT_PAGES = {
    "login",
    "logout",
    "oidc_authentication_init",
    "oidc_authentication_callback",
    "set_language",
    "healthz",
    "api-docs",
    "api-schema",
    "metrics",
    "organization-suggestions",  # a fragment: the organization filter's suggestions, swapped in by htmx
    "oidc-backchannel-logout",  # a provider's POST
}


def _page_routes(patterns, namespace: str = "", prefix: str = ""):
    for entry in patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            if entry.namespace in SKIPPED_NAMESPACES:
                continue
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from _page_routes(entry.url_patterns, inner, route)
        elif isinstance(entry, URLPattern) and entry.name:
            kwargs = set(entry.pattern.regex.groupindex)
            if route.startswith("api/") or kwargs - {"org_slug"} or entry.name in NOT_PAGES:
                continue
            if route.endswith((".csv", ".json", "print/")) or "export" in entry.name:
                continue
            yield f"{namespace}{entry.name}", bool(kwargs)


PAGES = sorted(set(_page_routes(get_resolver().url_patterns)))

# The one line the top bar keeps: its height with a single row of links.
TOPBAR_WRAPS = "() => document.querySelector('header.topbar').getBoundingClientRect().height > 64"
PAGE_SCROLLS_SIDEWAYS = "() => document.documentElement.scrollWidth - window.innerWidth"
# Words broken across lines inside a table cell: a date split at its hyphen ("2026-11-" / "24"), a host name
# ("workers-p5-48" / "xlarge-1"), a figure. Latin words only (Japanese breaks between any two characters);
# a word's own characters laid out on more than one line is the break. A compound of letters may break at its
# hyphen ("Accelerator-" / "hours", "pretrain-" / "resume"), a path at its slashes, and free text written by a
# person (a cell marked "prose", e.g. a case title) wraps as text does.
BROKEN_WORDS = """() => {
    const broken = new Set(), range = document.createRange();
    const walker = document.createTreeWalker(document.querySelector('main'), NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const cell = node.parentElement.closest('td, th');
        if (!cell || cell.classList.contains('prose')) continue;
        if (node.parentElement.closest('svg, select, textarea, pre')) continue;
        for (const word of node.data.matchAll(/[\\x21-\\x7e]{2,}/g)) {
            range.setStart(node, word.index);
            range.setEnd(node, word.index + word[0].length);
            const lines = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.bottom)));
            const compound = /^[A-Za-z]+(-[A-Za-z]+)+$/;
            if (lines.size > 1 && !compound.test(word[0]) && !word[0].includes('/')) broken.add(word[0]);
        }
    }
    return [...broken].slice(0, 8);
}"""


# Japanese labels broken inside a word (アイ|ドルコスト, 割当超|過): every short Japanese text (a label, a header, a
# badge, a card's caption; sentences wrap as text does) is read character by character, and where its line changes
# the break is recorded; japanese_breaks_inside_words then keeps the breaks that are not between BudouX's phrases.
JAPANESE_LINE_BREAKS = """() => {
    const breaks = [], range = document.createRange();
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const text = node.data;
        if (text.trim().length < 2 || text.length > 40 || !/[\u3040-\u30ff\u4e00-\u9fff]/.test(text)) continue;
        if (node.parentElement.closest('svg, select, textarea, pre, option, script, style, .visually-hidden')) continue;
        let line = null;
        for (let i = 0; i < text.length; i++) {
            range.setStart(node, i);
            range.setEnd(node, i + 1);
            const rect = [...range.getClientRects()].find(r => r.width > 0);
            if (!rect) continue;
            const top = Math.round(rect.top);
            if (line !== null && top > line + 2) breaks.push([text, i]);
            line = top;
        }
    }
    return breaks;
}"""


def japanese_breaks_inside_words(breaks: list[tuple[str, int]]) -> list[str]:
    """The breaks that fall inside a phrase as BudouX (the model Chromium's `word-break: auto-phrase` uses) cuts
    the text, shown as "前|後". A break at a space or punctuation, or where the script changes (あたり|20, GPU|を),
    is a break between words."""
    import budoux

    parser = budoux.load_default_japanese_parser()
    inside = []
    for text, at in breaks:
        if _script(text[at - 1]) is None or _script(text[at - 1]) != _script(text[at]):
            continue
        boundaries, end = set(), 0
        for phrase in parser.parse(text):
            end += len(phrase)
            boundaries.add(end)
        if at not in boundaries:
            inside.append(f"{text[:at].strip()}|{text[at:].strip()}")
    return sorted(set(inside))


def _script(character: str) -> str | None:
    """Which writing a character belongs to: hiragana, katakana (with its ー), kanji, or Latin letters and digits."""
    if "\u3041" <= character <= "\u309f":
        return "hiragana"
    if "\u30a0" <= character <= "\u30ff":
        return "katakana"
    if "\u4e00" <= character <= "\u9fff":
        return "kanji"
    return "latin" if character.isascii() and character.isalnum() else None


@pytest.fixture
def demo(db):
    call_command("load_demo", "--start", (date.today() - timedelta(days=45)).isoformat())
    call_command("load_demo_workloads")
    call_command("load_demo_usage")
    call_command("load_demo_training")
    call_command("load_demo_outcomes")


def test_the_walk_finds_the_list_pages():
    names = {name for name, _ in PAGES}
    assert {"allocations", "records:tracking", "clusters:list", "support:list", "capacity", "audit-log"} <= names


@pytest.mark.parametrize("language", ["en", "ja"])
@pytest.mark.parametrize(
    ("username", "org_slug"), [("manager", "sakura-lab"), ("support", "sakura-lab"), ("tenant1", "sakura-lab")]
)
def test_no_page_overflows_at_1280(page, live_server, screenshot, demo, axe, language, username, org_slug):
    """…and every page passes axe-core (no serious or critical violation) in both languages, for every role."""
    log_in(page, live_server, username, language)
    problems, visited = [], 0
    for name, takes_org in PAGES:
        url = reverse(name, kwargs={"org_slug": org_slug} if takes_org else None)
        probe = page.request.get(f"{live_server.url}{url}", max_redirects=0)
        if probe.status != 200 or "text/html" not in probe.headers.get("content-type", ""):
            continue  # not this role's page (403), a redirect, or a form that only takes a POST
        page.goto(f"{live_server.url}{url}")
        page.wait_for_load_state("networkidle")
        visited += 1
        if (sideways := page.evaluate(PAGE_SCROLLS_SIDEWAYS)) > 0:
            problems.append(f"{url}: the page scrolls {sideways} px sideways")
        if overflowing := page.evaluate(OVERFLOWING):
            problems.append(f"{url}: overflows its card: {overflowing}")
        if page.evaluate(TOPBAR_WRAPS):
            problems.append(f"{url}: the top bar wraps")
        if broken := page.evaluate(BROKEN_WORDS):
            problems.append(f"{url}: words broken across lines in a table: {broken}")
        page.evaluate(axe)  # not a <script> tag: the Content-Security-Policy refuses inline scripts
        if violations := page.evaluate(SERIOUS):
            problems.append(f"{url}: axe-core: {violations}")
        if language == "ja" and (split := japanese_breaks_inside_words(page.evaluate(JAPANESE_LINE_BREAKS))):
            problems.append(f"{url}: Japanese words broken across lines: {split}")
            broken = broken or split
        if sideways > 0 or overflowing or broken:
            screenshot(f"layout-{username}-{language}-{name.replace(':', '-')}")
    assert visited >= 10
    assert problems == [], "\n".join(problems)


# The tallest of the elements a selector finds, in lines of its own text.
TALLEST_IN_LINES = """selector => Math.max(...[...document.querySelectorAll(selector)].map(a => {
    const lineHeight = parseFloat(getComputedStyle(a).lineHeight);
    return Math.round(a.getBoundingClientRect().height / lineHeight);
}))"""


@pytest.mark.parametrize("language", ["en", "ja"])
def test_workload_names_read_on_one_line_in_the_tracking_view(page, live_server, screenshot, demo, language):
    """The demo's names (20 characters at most) fit their column; before, ten columns squeezed them onto two
    or three lines."""
    log_in(page, live_server, "manager", language)
    page.goto(f"{live_server.url}{reverse('records:tracking')}")
    assert page.locator("table.tracking td.name").count() >= 4
    screenshot(f"layout-tracking-{language}")
    assert page.evaluate(TALLEST_IN_LINES, "table.tracking td.name > a") == 1


def test_the_persons_menu_switches_language_and_logs_out(page, live_server, demo):
    log_in(page, live_server, "manager", "en")
    page.goto(f"{live_server.url}{reverse('program-overview')}")
    menu = page.locator("details.user-menu")
    assert not menu.locator("a", has_text="API tokens").is_visible()  # folded away until asked for
    menu.locator("summary").click()
    with page.expect_navigation():
        menu.locator("select[name=language]").select_option("ja")
    assert page.locator("html").get_attribute("lang") == "ja"
    page.locator("details.user-menu summary").click()
    page.mouse.click(5, 300)  # a click elsewhere folds it again
    assert not page.locator("details.user-menu a", has_text="API トークン").is_visible()
    page.locator("details.user-menu summary").click()
    page.get_by_role("button", name="ログアウト").click()
    page.wait_for_url("**/login/")


@pytest.mark.parametrize("language", ["en", "ja"])
def test_case_titles_read_in_a_few_lines_on_the_support_queue(page, live_server, screenshot, demo, language):
    """A support engineer's home: before, ten columns squeezed a title to one or two words a line (seven lines
    for the demo's Xid case) and split its dates at their hyphens."""
    from tenants.access import SYSTEM
    from tenants.models import Organization
    from workloads.clusters.models import Cluster
    from workloads.records.models import Workload
    from workloads.support.services import open_case

    org = Organization.objects.get(slug="sakura-lab")
    open_case(  # an incident case as the portal writes one, with the demo's longest title
        user=SYSTEM,
        organization=org,
        title="Xid 79 on GPU 3: GPU has fallen off the bus on workers-p5-48xlarge-1 — cluster gpu-demo",
        description="Reset the GPU, or replace the node.",
        category="node_health",
        severity="s2",
        workload=Workload.objects.filter(organization=org).first(),
        cluster=Cluster.objects.filter(organization=org).first(),  # named under the title beside the workload
    )
    log_in(page, live_server, "support", language)
    assert page.locator("#case-table tbody tr").count() >= 3  # landed on the queue
    screenshot(f"layout-support-queue-{language}")
    assert page.evaluate(TALLEST_IN_LINES, "#case-table tbody td:nth-child(2) > a") <= 3
    assert page.evaluate(BROKEN_WORDS) == []
    # Not a card: the queue's table must fit the page without scrolling in its own box either.
    assert (
        page.evaluate(
            "() => { const box = document.querySelector('#case-table .table-scroll');"
            " return box.scrollWidth - box.clientWidth; }"
        )
        <= 0
    )


def test_the_japanese_break_check_tells_a_word_from_a_phrase():
    """The check the walk runs: the issue's broken labels are caught, breaks between phrases or scripts are not."""
    assert japanese_breaks_inside_words(
        [("アイドルコスト", 2), ("割当超過", 3), ("計画に間に合わない見込みの学習はありません。", 20)]
    ) == ["アイ|ドルコスト", "割当超|過", "計画に間に合わない見込みの学習はありませ|ん。"]
    assert (
        japanese_breaks_inside_words([("割当超過 602.4 インスタンス時間", 5), ("1パラメータあたり20トークン", 9)]) == []
    )
