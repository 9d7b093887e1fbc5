"""The demo's training (what `make run` shows) goes through the real parser and ingest, and is loaded once. That the
progress benchmark still runs is tests/test_bench.py's (every benchmark, at a tiny size)."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from workloads.training.models import LogSource, RunStart, TrainingRun

pytestmark = pytest.mark.django_db


def test_the_demo_training_is_two_runs_read_from_megatron_logs_once(catalog):
    call_command("load_demo", verbosity=0)
    call_command("load_demo_workloads", verbosity=0)
    call_command("load_demo_training", verbosity=0)
    call_command("load_demo_training", verbosity=0)  # idempotent
    runs = {run.workload.name: run for run in TrainingRun.objects.select_related("workload")}
    assert set(runs) == {"sakura-70b-pretrain", "kitsune-moe-pretrain"}
    sakura = runs["sakura-70b-pretrain"]
    assert (sakura.log_format, sakura.restarts) == ("megatron", 1)
    assert RunStart.objects.filter(run=sakura, kind=RunStart.Kind.RESTART).count() == 1
    assert LogSource.objects.filter(run=sakura).count() == 2  # the job before the restart, and the one after
    assert sakura.points > 1_000 and sakura.implausible_points == 0
