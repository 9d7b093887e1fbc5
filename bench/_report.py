"""Each benchmark's headline figures, each with its goal and whether this run met it.

A benchmark calls `record(...)` for every figure it prints a verdict on; `python -m bench` passes the path of a
JSON-lines file in BENCH_REPORT (one object a line), reads it back when every benchmark has run and prints one table.
Run on its own (`python -c "import bench.usage as b; b.main()"`), a benchmark records nothing and just prints.

BENCH_TINY=1 runs every benchmark at a tiny size (a few rows, one repeat, no external programs such as Prometheus):
what tests/test_bench.py runs in CI so that a benchmark that no longer runs fails there. Its figures mean nothing.
"""

from __future__ import annotations

import json
import os

REPORT_ENV = "BENCH_REPORT"
TINY = os.environ.get("BENCH_TINY", "") not in ("", "0")


def tiny(full, small):
    """`small` in a tiny run, `full` otherwise."""
    return small if TINY else full


def _write(entry: dict) -> None:
    path = os.environ.get(REPORT_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(entry, ensure_ascii=False) + "\n")


def record(bench: str, name: str, value: float, unit: str, goal: str, met: bool | None) -> None:
    """One headline figure: `goal` in words ("≤ 1.5×", "0 queries more"), `met` None when it has no goal.

    Printed too, so a run's output and its summary table never disagree."""
    verdict = "—" if met is None else ("met" if met else "NOT met")
    print(f"  [{bench}] {name}: {fmt(value, unit)}   goal: {goal or '—'}   {verdict}", flush=True)
    _write({"kind": "figure", "bench": bench, "name": name, "value": value, "unit": unit, "goal": goal, "met": met})


def table(bench: str, title: str, header: list[str], rows: list[list]) -> None:
    """A detailed table for the docs (e.g. the planner's per-size figures), rendered as Markdown by --readme."""
    _write({"kind": "table", "bench": bench, "title": title, "header": header, "rows": rows})


def fmt(value: float, unit: str) -> str:
    if unit == "×":
        return f"{value:.2f}×"
    if unit == "%":
        return f"{value:.2f} %"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer() and abs(value) >= 100):
        text = f"{int(value):,}"
    elif abs(value) >= 100:
        text = f"{value:,.0f}"
    elif abs(value) >= 10:
        text = f"{value:.1f}"
    else:
        text = f"{value:.2f}"
    return f"{text} {unit}".strip()


def read(path: str) -> list[dict]:
    try:
        with open(path, encoding="utf-8") as lines:
            return [json.loads(line) for line in lines if line.strip()]
    except FileNotFoundError:
        return []
