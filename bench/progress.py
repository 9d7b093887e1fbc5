"""Training progress at the scale of a real run: six months print about 1.5 million iterations.

- Ingest: a Megatron-Core log of ITERATIONS lines (timestamps, throughput per GPU, one line an iteration), sent as
  the reporter sends it, in 8 MB chunks with their offsets, through workloads.training.ingest (parse, restarts, the
  points' upsert, the hourly sums, the run's state): lines per second, beside a bare bulk insert of the same rows
  (already parsed, straight into the table). Goal: within 3×. Then the same chunks again (all read already).
- The workload page and the progress API with ITERATIONS points against 1,000: medians of REPEAT requests after one
  to warm, and their SQL queries. Goal: within 1.5×, the same number of queries.

BENCH_PROGRESS_ITERATIONS changes the size (BENCH_TINY=1: 1,200 iterations, one request each).
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime, timedelta

from bench._django import median_get, setup
from bench._report import record, tiny

ITERATIONS = int(os.environ.get("BENCH_PROGRESS_ITERATIONS", tiny(1_500_000, 1_200)))
SMALL = min(1_000, ITERATIONS)
CHUNK_BYTES = 8 * 1024 * 1024
REPEAT = int(os.environ.get("BENCH_REPEAT", tiny(5, 1)))
LINE = (
    "[{at}] iteration {i:>8}/ 1500000 | consumed samples: {samples:>12} | elapsed time per iteration (ms): "
    "10523.4 | throughput per GPU (TFLOP/s/GPU): 402.1 | learning rate: 3.000000E-04 | global batch size:  1024 | "
    "lm loss: {loss:.6E} | loss scale: 1.0 | grad norm: 0.912 | number of skipped iterations:   0 | number of nan "
    "iterations:   0 |\n"
)


def chunks(iterations: int, *, start: datetime):
    """The log in chunks of about CHUNK_BYTES, whole lines each: (offset, text)."""
    offset, lines, size = 0, [], 0
    for i in range(1, iterations + 1):
        at = (start + timedelta(seconds=10.5234 * i)).strftime("%Y-%m-%d %H:%M:%S")
        line = LINE.format(at=at, i=i, samples=i * 1024, loss=2.0 + 8.0 / (1 + i / 1000))
        lines.append(line)
        size += len(line)
        if size >= CHUNK_BYTES:
            yield offset, "".join(lines)
            offset, lines, size = offset + size, [], 0
    if lines:
        yield offset, "".join(lines)


def workload(name: str):
    from tests.factories import (
        ActiveAllocationFactory,
        CapacityPoolFactory,
        OrganizationFactory,
        WorkloadFactory,
        instance_type,
    )

    org = OrganizationFactory(slug=f"bench-{name}")
    pool = CapacityPoolFactory(instance_type=instance_type("p5.48xlarge"))
    allocation = ActiveAllocationFactory(organization=org, pool=pool, instance_count=32)
    return WorkloadFactory(
        organization=org, name=name, allocation=allocation, parameter_count=70 * 10**9, tensor_parallel=8,
        pipeline_parallel=4, data_parallel=8, target_tokens=15 * 10**12,
    )  # fmt: skip


def ingest(run, iterations: int, *, start: datetime) -> tuple[float, int]:
    from workloads.training.ingest import record_log
    from workloads.training.models import LogSource

    elapsed, lines = 0.0, 0
    for offset, text in chunks(iterations, start=start):
        began = time.perf_counter()
        outcome = record_log(
            run=run, text=text, kind=LogSource.Kind.REPORTER, source="/fsx/slurm-1.out#1", offset=offset
        )
        elapsed += time.perf_counter() - began
        lines += outcome.lines
    return elapsed, lines


def bare_insert(run, iterations: int, *, start: datetime) -> float:
    """The same rows, parsed beforehand (not timed), straight into the table."""
    from workloads.training.ingest import BATCH
    from workloads.training.logs import parse_log
    from workloads.training.models import ProgressPoint

    elapsed = 0.0
    for _offset, text in chunks(iterations, start=start):
        rows = [
            ProgressPoint(
                organization_id=run.organization_id,
                run=run,
                iteration=p.iteration,
                at=p.at,
                tokens=p.consumed_samples * 4096,
                loss=p.loss,
                learning_rate=p.learning_rate,
                grad_norm=p.grad_norm,
                step_seconds=p.step_seconds,
                tflops_logged=p.tflops_per_accelerator,
            )  # fmt: skip
            for p in parse_log(text).points
        ]
        began = time.perf_counter()
        ProgressPoint.objects.bulk_create(rows, batch_size=BATCH)
        elapsed += time.perf_counter() - began
    return elapsed


def main() -> None:
    setup()
    import logging

    logging.disable(logging.WARNING)
    from django.test import Client

    from tests.factories import MembershipFactory
    from workloads.training.models import ProgressPoint
    from workloads.training.services import run_for

    start = datetime.now(UTC) - timedelta(seconds=10.5234 * ITERATIONS + 3600)
    large = workload("large-70b")
    run = run_for(workload=large, name="main", sequence_length=4096)
    print(f"ingest: {ITERATIONS:,} Megatron-Core lines in {CHUNK_BYTES // 2**20} MB chunks, as the reporter sends them")
    seconds, lines = ingest(run, ITERATIONS, start=start)
    assert ProgressPoint.objects.filter(run=run).count() == ITERATIONS
    again, _lines = ingest(run, ITERATIONS, start=start)
    added_again = ProgressPoint.objects.filter(run=run).count() - ITERATIONS
    scratch = run_for(workload=large, name="bare", sequence_length=4096)
    bare = bare_insert(scratch, ITERATIONS, start=start)
    ProgressPoint.objects.filter(run=scratch).delete()
    scratch.delete()
    ratio = seconds / bare
    print(f"  ingest                {seconds:8.1f} s   {lines / seconds:10,.0f} lines/s")
    print(f"  bare bulk insert      {bare:8.1f} s   {ITERATIONS / bare:10,.0f} rows/s")
    print(f"  ratio ingest / bare   {ratio:8.2f}×  (goal: within 3×: {'met' if ratio <= 3 else 'NOT met'})")
    print(f"  the same chunks again {again:8.1f} s   (all read already: {added_again} new points)")
    record("progress", f"ingest ÷ bare bulk insert, {ITERATIONS:,} lines", ratio, "×", "≤ 3×", ratio <= 3)
    record("progress", "ingest", lines / seconds, "lines/s", "", None)
    record("progress", "the same chunks again: new points", added_again, "", "0", added_again == 0)

    small = workload("small-70b")
    small_run = run_for(workload=small, name="main", sequence_length=4096)
    ingest(small_run, SMALL, start=datetime.now(UTC) - timedelta(seconds=10.5234 * SMALL + 3600))
    member = MembershipFactory(organization=large.organization).user
    MembershipFactory(organization=small.organization, user=member)
    client = Client()
    client.force_login(member)
    print(f"pages: {ITERATIONS:,} points against {SMALL:,} (medians of {REPEAT} after one to warm)")
    for label, path in (("workload page", "/workloads/{}/"), ("progress API", "/api/v1/workloads/{}/progress/")):
        figures = {}
        for size, item in ((SMALL, small), (ITERATIONS, large)):
            url = path.format(item.pk)
            client.get(url)
            figures[size] = median_get(client, url, REPEAT)
        few, many = figures[SMALL], figures[ITERATIONS]
        ratio = many["ms"] / few["ms"]
        same = many["queries"] == few["queries"]
        print(
            f"  {label:14} {few['ms']:7.1f} ms / {many['ms']:7.1f} ms  {ratio:5.2f}× (goal ≤ 1.5×: "
            f"{'met' if ratio <= 1.5 else 'NOT met'})  queries {few['queries']} / {many['queries']} "
            f"(constant: {'yes' if same else 'NO'})"
        )
        record("progress", f"{label}, {ITERATIONS:,} ÷ {SMALL:,} points", ratio, "×", "≤ 1.5×", ratio <= 1.5)
        record("progress", f"{label}: queries at {ITERATIONS:,} points more than at {SMALL:,}",
               many["queries"] - few["queries"], "", "0", same)  # fmt: skip
