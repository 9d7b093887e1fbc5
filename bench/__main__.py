"""`make bench`: run every benchmark module in bench/ (each has a main()), then print one table of their figures.

Each module runs in a process of its own, on a database of its own (bench/_django.py): one benchmark's rows
never weigh on another's figures (the usage dashboard read the capacity benchmark's 2,000 organizations and
program when they shared one). The database is migrated once, here, and each process starts from a copy.

Each module records its headline figures with their goals (bench/_report.py); at the end this prints them all:
benchmark, figure, value, goal, met or NOT met. The exit status is non-zero only when a benchmark crashed (or
recorded no figure at all): a missed goal is a finding, reported in the table, not a failure of the run.

    python -m bench [names…]         run those (default: all)
    python -m bench --tiny           every benchmark at a tiny size (BENCH_TINY=1; the figures mean nothing)
    python -m bench --markdown       the final table as Markdown
    python -m bench --report FILE    keep the run's records (JSON lines) in FILE
    python -m bench --readme         rewrite the docs' tables of the benchmarks that ran, between
                                     <!-- bench:NAME --> and <!-- /bench:NAME --> in any page of docs/ (today
                                     docs/operations/benchmarks.md; never from a tiny run)
    python -m bench --from FILE      no run: the table (and --readme) from records kept with --report
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from bench._report import REPORT_ENV, fmt, read

# The pages whose `<!-- bench:NAME -->` blocks --readme rewrites: every Markdown file of the docs site.
DOCS = Path(__file__).resolve().parent.parent / "docs"


def names() -> list[str]:
    import pkgutil

    return sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if not m.name.startswith("_"))


def make_template(env: dict) -> str:
    """Migrate once; each benchmark process copies the result (bench/_django.py)."""
    done = subprocess.run(
        [sys.executable, "-c", "import bench._django as d; print(d.make_template())"],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode:
        sys.exit(f"could not migrate the benchmarks' database:\n{done.stdout}{done.stderr}")
    return done.stdout.strip().splitlines()[-1]


def run(only: list[str], report: str, tiny: bool) -> list[str]:
    """Runs the benchmarks, their records appended to `report`; returns those that crashed."""
    env = {**os.environ, REPORT_ENV: report}
    if tiny:
        env["BENCH_TINY"] = "1"
    vendor = "postgresql" if env.get("BENCH_DATABASE_URL") else "sqlite"
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    started = datetime.now().isoformat(timespec="minutes")
    meta = {"started": started, "vendor": vendor, "tiny": tiny, "cpus": os.cpu_count(), "load": load}
    _append(report, {"kind": "run", **meta, "python": platform.python_version()})
    print(f"migrating the benchmarks' {vendor} database once …", flush=True)
    env["BENCH_TEMPLATE_DB"] = template = make_template(env)
    failed = []
    try:
        for name in only:
            print(f"\n=== bench/{name}.py", flush=True)
            started = time.perf_counter()
            code = subprocess.call([sys.executable, "-c", f"import bench.{name} as b; b.main()"], env=env)
            _append(report, {"kind": "exit", "bench": name, "code": code, "seconds": time.perf_counter() - started})
            if code:
                failed.append(name)
    finally:
        if vendor == "sqlite":
            shutil.rmtree(Path(template).parent, ignore_errors=True)
    return failed


def _append(path: str, entry: dict) -> None:
    import json

    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(entry) + "\n")


def verdict(met) -> str:
    return "—" if met is None else ("met" if met else "NOT met")


def summary(records: list[dict], *, markdown: bool) -> str:
    figures = [r for r in records if r["kind"] == "figure"]
    rows = [[f["bench"], f["name"], fmt(f["value"], f["unit"]), f["goal"] or "—", verdict(f["met"])] for f in figures]
    for r in records:
        if r["kind"] == "exit" and r["code"]:
            rows.append([r["bench"], "(crashed)", f"exit {r['code']}", "runs", "NOT met"])
        elif r["kind"] == "exit" and not any(f["bench"] == r["bench"] for f in figures):
            rows.append([r["bench"], "(no figure recorded)", "", "records its figures", "NOT met"])
    header = ["bench", "figure", "value", "goal", "met"]
    if markdown:
        return _markdown(header, rows)
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(cell).ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
             for row in [header, ["-" * w for w in widths], *rows]]  # fmt: skip
    missed = sum(1 for f in figures if f["met"] is False)
    lines.append(f"{len(figures)} figures, {sum(1 for f in figures if f['met'])} goals met, {missed} NOT met")
    return "\n".join(lines)


def _markdown(header: list[str], rows: list[list]) -> str:
    def line(cells) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(header), line(["---"] * len(header)), *(line(r) for r in rows)])


def docs_block(bench: str, records: list[dict]) -> str:
    """What goes between a benchmark's markers: how the figures were made, its detailed tables, its figures."""
    meta = next(r for r in records if r["kind"] == "run")
    load = f", load average {meta['load']:.1f} at the start" if meta.get("load") is not None else ""
    lines = [
        f"Generated by `python -m bench --readme {bench}` from the run of {meta['started'][:10]} on "
        f"{'PostgreSQL' if meta['vendor'] == 'postgresql' else 'SQLite'}, {meta['cpus']} cores{load}:",
        "",
    ]
    for t in (r for r in records if r["kind"] == "table" and r["bench"] == bench):
        lines += [_markdown(t["header"], t["rows"]), ""]
    figures = [r for r in records if r["kind"] == "figure" and r["bench"] == bench]
    lines.append(_markdown(["figure", "value", "goal", "met"],
                           [[f["name"], fmt(f["value"], f["unit"]), f["goal"] or "—", verdict(f["met"])]
                            for f in figures]))  # fmt: skip
    return "\n".join(lines)


def rewrite_docs(records: list[dict], docs: Path = DOCS) -> dict[str, list[str]]:
    """Replace each benchmark's block wherever a page of docs/ holds its markers (the README held them before the
    docs site); returns the pages rewritten, relative to docs/, each with the benchmarks whose block it holds."""
    if any(r["kind"] == "run" and r["tiny"] for r in records):
        sys.exit("--readme: not from a tiny run (its figures mean nothing)")
    benches = sorted({r["bench"] for r in records if r["kind"] == "figure"})
    done: dict[str, list[str]] = {}
    for page in sorted(docs.rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        for bench in benches:
            pattern = re.compile(rf"(<!-- bench:{bench} -->\n).*?(<!-- /bench:{bench} -->)", re.DOTALL)
            if pattern.search(text):
                block = docs_block(bench, records)
                text = pattern.sub(lambda m, block=block: m.group(1) + block + "\n" + m.group(2), text)
                done.setdefault(page.relative_to(docs).as_posix(), []).append(bench)
        if page.relative_to(docs).as_posix() in done:
            page.write_text(text, encoding="utf-8")
    return done


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help=f"benchmarks to run (default: all of {', '.join(names())})")
    parser.add_argument("--tiny", action="store_true", help="a tiny size: checks that each benchmark runs")
    parser.add_argument("--markdown", action="store_true", help="print the final table as Markdown")
    parser.add_argument("--report", help="keep the records (JSON lines) in this file")
    parser.add_argument(
        "--readme", "--docs", dest="readme", action="store_true",
        help="rewrite these benchmarks' tables in the docs (the <!-- bench:NAME --> blocks of docs/**/*.md)",
    )  # fmt: skip
    parser.add_argument("--from", dest="source", help="no run: read the records kept by --report")
    args = parser.parse_args()
    unknown = set(args.names) - set(names())
    if unknown:
        sys.exit(f"no such benchmark: {', '.join(sorted(unknown))} (there are: {', '.join(names())})")
    failed: list[str] = []
    if args.source:
        records = read(args.source)
    else:
        tiny = args.tiny or os.environ.get("BENCH_TINY", "") not in ("", "0")
        report = args.report or tempfile.mkstemp(prefix="bench-", suffix=".jsonl")[1]
        if args.report:
            Path(report).write_text("")
        try:
            failed = run(args.names or names(), report, tiny)
            records = read(report)
        finally:
            if not args.report:
                os.unlink(report)
    print("\n=== summary: each figure measured in this run, its goal, met or not\n")
    print(summary(records, markdown=args.markdown))
    if args.readme:
        pages = rewrite_docs(records)
        rewritten = "; ".join(f"docs/{page}: {', '.join(benches)}" for page, benches in pages.items())
        print(f"\ndocs: rewrote the tables of {rewritten or 'no benchmark'}")
    silent = [r["bench"] for r in records if r["kind"] == "exit" and not r["code"]
              and not any(f["kind"] == "figure" and f["bench"] == r["bench"] for f in records)]  # fmt: skip
    if failed or silent:
        sys.exit(f"benchmarks failed: {', '.join(failed + silent)}")


if __name__ == "__main__":
    main()
