"""Racing posts to one run on PostgreSQL: the run's row lock serializes them, so no post's points, sums or counters
are lost, and a chunk posted twice at once is read once."""

from __future__ import annotations

import pytest
from django.db.models import Sum

from tests.tenants.test_capacity_concurrency import race
from tests.training.test_ingest import megatron_lines
from workloads.training.models import LogSource, ProgressHour, ProgressPoint, TrainingRun
from workloads.training.services import post_progress, run_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("catalog"),
    pytest.mark.postgresql("row locks"),
]

JOBS = 8


def test_racing_chunks_of_one_run_lose_nothing(p5_workload):
    run_for(workload=p5_workload, name="main", sequence_length=4096)

    # Eight jobs' logs of 50 iterations each, iterations apart (as eight data-loading shards would never be, but
    # as eight reporters posting at once are), each also posted twice at the same moment.
    def post(job: int):
        text = megatron_lines(job * 100 + 1, job * 100 + 50)
        return lambda: post_progress(
            workload=p5_workload, run="main", text=text, kind=LogSource.Kind.REPORTER, source=f"job-{job}#1", offset=0
        )

    results = race([post(job) for job in range(JOBS)] * 2)
    assert not [r for r in results if isinstance(r, Exception)], results
    assert sum(r.created + r.computed_again for r in results) == JOBS * 50  # every chunk read once, whoever won
    run = TrainingRun.objects.get()
    assert ProgressPoint.objects.filter(run=run).count() == JOBS * 50
    assert ProgressHour.objects.filter(run=run).aggregate(n=Sum("iterations"))["n"] == JOBS * 50
    # The run's counters were kept under its lock: no post's increments lost to another's.
    assert (run.points, run.restarts) == (sum(r.created for r in results), sum(r.restarts for r in results))
