"""The documentation holds together: the site (mkdocs.yml, docs/) builds with --strict and not one warning — a
broken link, an anchor no page has, an image that is not there, a page left out of the nav —; the README's own
links reach files (and headings) that exist; the guides' screenshots come in both languages and stay small; and
the benchmark tables `python -m bench --readme` rewrites sit in docs/, where it looks for them."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify

from bench.__main__ import names, rewrite_docs

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
# The benchmarks whose tables the docs keep, each rewritten from a run (bench/__main__.py).
TABLES = {"capacity", "clusters", "ingest", "planner", "program_pages", "progress", "usage"}


def test_the_site_builds_with_no_warning(tmp_path):
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
         "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    output = built.stdout + built.stderr
    assert built.returncode == 0, output
    assert "WARNING" not in output, output
    assert (tmp_path / "site" / "index.html").exists()
    assert (tmp_path / "site" / "operations" / "configuration.html").exists()


def anchors(page: Path) -> set[str]:
    """The ids MkDocs gives a page's headings (Python-Markdown's toc slugify, code spans read as their text)."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    return {slugify(heading.replace("`", ""), "-") for heading in re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE)}


def test_the_readme_links_reach_files_and_headings_that_exist():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = [target for target in LINK.findall(readme) if not re.match(r"[a-z]+:", target)]
    assert len(links) >= 10  # the "where to read on" list was read
    for target in links:
        path, _, anchor = target.partition("#")
        assert not path.startswith("/"), f"README.md: {target} is absolute: GitHub and a clone read it differently"
        file = (ROOT / path).resolve()
        assert file.exists(), f"README.md links to {target}, which does not exist"
        if anchor:
            assert anchor in anchors(file), f"README.md links to {target}: {path} has no heading '#{anchor}'"


def test_the_readme_keeps_to_what_a_newcomer_needs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 120, "the rest belongs in docs/"
    for needed in ("make run", "make test", "make bench", "4–5 minutes", "Listening at:", "ready.", "`tenant1`"):
        assert needed in readme, needed
    assert "<!-- bench:" not in readme, "benchmark tables live in docs/operations/benchmarks.md"


def test_every_screenshot_comes_in_both_languages_and_stays_small():
    shots = sorted((DOCS / "images").glob("*.png"))
    assert shots
    for shot in shots:
        assert shot.stat().st_size < 300_000, f"{shot.name}: {shot.stat().st_size // 1024} KB"
        other = shot.with_name(re.sub(r"-(en|ja)\.png$", lambda m: "-ja.png" if m[1] == "en" else "-en.png", shot.name))
        assert other != shot and other.exists(), f"{shot.name} has no twin in the other language"
    used = {Path(target).name for page in DOCS.rglob("*.md") for target in LINK.findall(page.read_text("utf-8"))}
    unused = {shot.name for shot in shots} - used
    assert not unused, f"screenshots no page shows: {sorted(unused)}"


def bench_blocks() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for page in sorted(DOCS.rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        for bench in re.findall(r"<!-- bench:(\w+) -->", text):
            assert f"<!-- /bench:{bench} -->" in text, f"{page.name}: bench:{bench} is never closed"
            found.setdefault(bench, []).append(page.relative_to(DOCS).as_posix())
    return found


def test_each_benchmark_table_is_in_the_docs_once_and_names_a_benchmark():
    found = bench_blocks()
    assert set(found) == TABLES, found
    assert set(found) <= set(names())
    assert all(len(pages) == 1 for pages in found.values()), found


def test_bench_readme_rewrites_the_blocks_in_the_docs(tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs, ignore=shutil.ignore_patterns("*.png"))
    before = {page: page.read_text(encoding="utf-8") for page in docs.rglob("*.md")}
    records = [
        {"kind": "run", "started": "2027-01-04T10:00", "vendor": "sqlite", "tiny": False, "cpus": 2, "load": 0.5},
        {"kind": "figure", "bench": "planner", "name": "plan 200 requests", "value": 0.5, "unit": "s",
         "goal": "< 2 s", "met": True},
    ]  # fmt: skip
    done = rewrite_docs(json.loads(json.dumps(records)), docs)
    assert done == {"operations/benchmarks.md": ["planner"]}
    page = docs / "operations" / "benchmarks.md"
    text = page.read_text(encoding="utf-8")
    block = text.split("<!-- bench:planner -->\n", 1)[1].split("<!-- /bench:planner -->", 1)[0]
    assert block.startswith("Generated by `python -m bench --readme planner` from the run of 2027-01-04")
    assert "| plan 200 requests |" in block
    assert text.replace(block, "") == before[page].replace(
        before[page].split("<!-- bench:planner -->\n", 1)[1].split("<!-- /bench:planner -->", 1)[0], ""
    )  # the other blocks and the prose are untouched
    assert all(p.read_text(encoding="utf-8") == t for p, t in before.items() if p != page)


def test_bench_readme_refuses_a_tiny_run(tmp_path):
    with pytest.raises(SystemExit):
        rewrite_docs([{"kind": "run", "tiny": True}], tmp_path)
