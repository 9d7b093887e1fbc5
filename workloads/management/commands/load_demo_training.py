"""Demo training progress on top of `load_demo_workloads`: the running workloads' logs of the last two weeks, in
Megatron-Core's format (timestamps, throughput per GPU, MoE losses for the MoE run), read by the same parser and
ingest as a reporter's chunks. Sakura's 70B pre-training restarts once from a checkpoint after a node failure;
Kitsune's MoE run is slower than its estimate and projected to miss its plan. Idempotent; refuses production.
"""

from __future__ import annotations

import math
import random
from datetime import timedelta

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from workloads.records.models import Workload
from workloads.training.figures import accelerators_of, peak_tflops_of
from workloads.training.models import LogSource, TrainingRun
from workloads.training.services import post_progress, run_for

SEQ, BATCH, LOG_INTERVAL = 4096, 1024, 10
LINE = (
    "[{at:%Y-%m-%d %H:%M:%S}] iteration {i:>8}/ {total:>8} | consumed samples: {samples:>12} | elapsed time per "
    "iteration (ms): {ms:.1f} | throughput per GPU (TFLOP/s/GPU): {tflops:.1f} | learning rate: {lr:.6E} | global "
    "batch size: {batch:>5} | lm loss: {loss:.6E} |{moe} loss scale: 1.0 | grad norm: {grad:.3f} | number of skipped "
    "iterations: {skipped:>3} | number of nan iterations:   0 |\n"
)
# (workload, MFU the log achieves, days of training, a restart (days ago, iterations lost) or None)
RUNS = [
    ("sakura-70b-pretrain", 0.38, 14, (3.0, 400)),
    ("kitsune-moe-pretrain", 0.21, 10, None),
]


class Command(BaseCommand):
    help = "Load demo training progress (two runs' logs) for the demo workloads. Idempotent."

    def handle(self, *args, **options) -> None:
        if settings.PRODUCTION:
            raise CommandError("Refusing to load demo data with PORTAL_PRODUCTION=True.")
        loaded = 0
        for name, mfu, days, restart in RUNS:
            workload = Workload.objects.select_related("allocation__pool__instance_type").filter(name=name).first()
            if workload is None:
                raise CommandError("Load the demo workloads first: manage.py load_demo_workloads")
            if TrainingRun.objects.for_org(workload.organization).filter(workload=workload).exists():
                continue
            run = run_for(workload=workload, name="main", sequence_length=SEQ)
            for number, text in enumerate(demo_log(run, mfu=mfu, days=days, restart=restart), start=1):
                post_progress(
                    workload=workload, run="main", text=text, kind=LogSource.Kind.REPORTER,
                    source=f"/fsx/logs/{name}-{number}.out#1", offset=0,
                )  # fmt: skip
            loaded += 1
        self.stdout.write(f"Demo training progress: {loaded} runs loaded.")


def demo_log(run: TrainingRun, *, mfu: float, days: int, restart) -> list[str]:
    """The run's log as Megatron-Core prints it: one text per job (a restart is a new job's log)."""
    accelerators = accelerators_of(run) or 8
    peak = peak_tflops_of(run) or 989.0
    parameters = run.workload.active_parameter_count or run.workload.parameter_count
    tokens_per_second = mfu * accelerators * peak * 1e12 / (6 * parameters)
    step = BATCH * SEQ / tokens_per_second  # seconds an iteration
    moe = run.workload.architecture == Workload.Architecture.MOE
    randomness = random.Random(run.workload.name)  # the same demo every time
    now = timezone.now().replace(microsecond=0)
    at = now - timedelta(days=days)
    jobs, lines, iteration = [], [], 0
    resume_at = now - timedelta(days=restart[0]) if restart else None
    total = int(days * 86400 / step * 3)
    while at < now - timedelta(minutes=30):
        if resume_at and at >= resume_at:
            jobs.append("".join(lines))
            lines, resume_at = [], None
            at += timedelta(hours=2)  # the node was replaced, the job queued again and restored its checkpoint
            iteration -= restart[1]
        iteration += LOG_INTERVAL
        slowdown = 1 + 0.04 * math.sin(iteration / 3000) + randomness.uniform(-0.01, 0.01)
        at += timedelta(seconds=step * LOG_INTERVAL * slowdown)
        loss = 2.1 + 8.5 / math.sqrt(1 + iteration / 40)
        lines.append(
            LINE.format(
                at=at, i=iteration, total=total, samples=iteration * BATCH, ms=step * slowdown * 1000,
                tflops=mfu * peak * 1.03 / slowdown, lr=3e-4 * min(1, iteration / 2000), batch=BATCH,
                loss=loss + randomness.uniform(-0.02, 0.02), grad=0.9 + randomness.uniform(-0.2, 0.2),
                moe=f" load_balancing_loss: {1.0 + randomness.uniform(0, 0.05):.6E} |" if moe else "",
                skipped=1 if randomness.random() < 0.002 else 0,
            )
        )  # fmt: skip
    jobs.append("".join(lines))
    return jobs
