"""Every benchmark still runs: `python -m bench --tiny` (BENCH_TINY=1: a few rows, one repeat, no Prometheus) on
SQLite, each module in its own process, and each records at least one figure with a goal.

Never a timing assertion: the figures of a tiny run mean nothing, and `make bench` reports missed goals itself."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.__main__ import names
from bench._report import read


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory) -> tuple[subprocess.CompletedProcess, list[dict]]:
    folder = tmp_path_factory.mktemp("bench")
    report = folder / "report.jsonl"
    env = {**os.environ, "PORTAL_VAR_DIR": str(folder / "var"), "BENCH_TINY": "1"}
    for name in ("BENCH_DATABASE_URL", "DATABASE_URL", "BENCH_REPORT", "BENCH_TEMPLATE_DB"):
        env.pop(name, None)  # SQLite, as CI has no database to spare per benchmark
    result = subprocess.run(
        [sys.executable, "-m", "bench", "--tiny", "--report", str(report)],
        cwd=Path(__file__).resolve().parent.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return result, read(str(report))


@pytest.mark.parametrize("name", names())
def test_the_benchmark_runs_at_a_tiny_size_and_records_a_goal(tiny_run, name):
    result, records = tiny_run
    exits = [r for r in records if r["kind"] == "exit" and r["bench"] == name]
    assert exits, f"bench/{name}.py did not run:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
    assert exits[0]["code"] == 0, f"bench/{name}.py crashed:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
    figures = [r for r in records if r["kind"] == "figure" and r["bench"] == name]
    assert any(f["goal"] and f["met"] is not None for f in figures), f"bench/{name}.py records no figure with a goal"


def test_the_run_ends_with_one_table_and_exits_0_when_nothing_crashed(tiny_run):
    result, _records = tiny_run
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    table = result.stdout.split("=== summary", 1)[1]
    assert "bench" in table and "goal" in table and "met" in table
