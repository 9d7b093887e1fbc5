"""Goodput and its badput by hand over one week, an organization's MFU, and training at risk where the program reads
it: the landing page, the weekly review, the digest and the organization's page."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.core import mail
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.factories import (
    ActiveAllocationFactory,
    ClusterFactory,
    JobFactory,
    StaffRoleFactory,
    UserFactory,
    WorkloadFactory,
)
from tests.training.test_ingest import BATCH, SEQ, steps
from workloads.training.goodput import week_goodput
from workloads.training.ingest import record_points
from workloads.training.models import TrainingRun
from workloads.training.program import organizations_week, training_at_risk
from workloads.training.services import run_for
from workloads.usage.models import NodeInterval

pytestmark = pytest.mark.django_db

TOKYO = ZoneInfo("Asia/Tokyo")
WEEK = date(2026, 11, 16)  # a Monday


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, minute, tzinfo=TOKYO)


@pytest.fixture
def week_of_training(org, p5_workload):
    """The allocation is held all week (168 h). Nodes run Tue 00:00 – Sun 00:00 (120 h); a job runs Tue 02:00 –
    Sat 02:00 (96 h). Iteration 1 ends Tue 03:00, one every 10 minutes to 432 (72 h); the log is silent two hours,
    then the job resumes from the checkpoint of iteration 420 at Fri 05:00 and trains 421–546 (126 × 10 min)."""
    allocation = p5_workload.allocation
    allocation.starts_on, allocation.ends_on = date(2026, 11, 1), date(2026, 12, 31)
    allocation.save()
    cluster = ClusterFactory(organization=org, allocation=allocation, workload=p5_workload)
    NodeInterval.objects.create(
        organization=org, cluster=cluster, instance_id="i-1", instance_type="p5.48xlarge", region="us-east-1",
        started_at=at(17, 0), ended_at=at(22, 0), last_seen_at=at(22, 0),
    )  # fmt: skip
    JobFactory(cluster=cluster, started_at=at(17, 2), ended_at=at(21, 2))
    run = run_for(workload=p5_workload, name="main", sequence_length=SEQ)
    ten_minutes = 600.0
    record_points(run=run, points=steps(1, 432, start=at(17, 3) - timedelta(seconds=600), seconds=ten_minutes))
    record_points(run=run, points=steps(421, 546, start=at(20, 5) - timedelta(seconds=600), seconds=ten_minutes))
    return run


def test_goodput_splits_the_held_week_by_hand(week_of_training, p5_workload):
    figures = week_goodput([p5_workload], week=WEEK, now=at(30, 0))[p5_workload.pk]
    assert figures.held == pytest.approx(168)
    assert figures.down == pytest.approx(48)  # 168 h held − 120 h of nodes
    assert figures.no_job == pytest.approx(24)  # 120 h of nodes − 96 h of job
    assert figures.startup == pytest.approx(1)  # job start 02:00 → first iteration 03:00
    assert figures.lost == pytest.approx(2)  # iterations 421–432 again: 12 × 10 min
    assert figures.productive == pytest.approx(91)  # 432 + 114 first-time iterations × 10 min = 546 × 600 s
    assert figures.no_progress == pytest.approx(2)  # 96 − 1 − 91 − 2 − 0: the log's two silent hours
    parts = figures.down + figures.no_job + figures.startup + figures.lost + figures.skipped + figures.no_progress
    assert parts + figures.productive == pytest.approx(figures.held)
    assert figures.goodput == pytest.approx(91 / 168)


def test_an_organizations_mfu_and_goodput_in_the_week(week_of_training, org, p5_workload):
    training = organizations_week([org.pk], week=WEEK, now=at(30, 0))[org.pk]
    # 546 × 4,194,304 tokens in 546 × 600 s: 6,990.5 tokens/s; 6 × 8e9 × 6,990.5 ÷ (64 × 989e12) = 0.0053013.
    assert training.mfu == pytest.approx(6 * 8e9 * (BATCH * SEQ / 600) / (64 * 989e12))
    assert training.goodput_ratio == pytest.approx(91 / 168)
    assert organizations_week([org.pk + 1000], week=WEEK, now=at(30, 0)).get(org.pk + 1000) is None


def test_training_at_risk_is_the_plan_reached_after_the_allocation(week_of_training, org, p5_workload):
    # At 546 × 4.19 M tokens over 7 days of wall time the 2 T-token plan takes about 17 years.
    [item] = training_at_risk(TrainingRun.objects.all(), now=at(22, 0))
    assert item.workload == p5_workload and item.finish.at_risk
    assert item.tokens == 546 * BATCH * SEQ
    # The run is younger than 7 days: its tokens over its age (from its first iteration, Tue 03:00).
    rate = 546 * BATCH * SEQ / (at(22, 0) - at(17, 3)).total_seconds()
    remaining = 2 * 10**12 - 546 * BATCH * SEQ
    assert item.finish.on == pytest.approx(at(22, 0) + timedelta(seconds=remaining / rate), abs=timedelta(seconds=1))
    # A plan the rate reaches in time is not at risk: 2.5 G tokens are left at 0.9 G a day.
    p5_workload.target_tokens = 546 * BATCH * SEQ + 2_500_000_000
    p5_workload.save()
    assert training_at_risk(TrainingRun.objects.all(), now=at(22, 0)) == []


def test_the_landing_page_lists_training_at_risk_and_each_organizations_mfu(week_of_training, client, p5_workload):
    manager = UserFactory()
    StaffRoleFactory(user=manager)
    client.force_login(manager)
    page = client.get("/program/")
    assert page.status_code == 200
    text = page.content.decode()
    assert 'id="glance-training"' in text and f"/workloads/{p5_workload.pk}/#training" in text
    assert page.context["glance"].at_risk[0].workload == p5_workload


def test_the_weekly_review_shows_training_columns(week_of_training, client, org, p5_workload):
    manager = UserFactory()
    StaffRoleFactory(user=manager)
    client.force_login(manager)
    page = client.get("/review/2026-W47/")
    assert page.status_code == 200
    [row] = [row for row in page.context["review"].organizations if row.organization == org]
    assert row.training.goodput_ratio == pytest.approx(91 / 168)
    assert row.at_risk[0].workload == p5_workload
    assert "Training at risk" in page.content.decode()


def test_the_digest_names_training_at_risk(week_of_training, org, settings, time_machine):
    time_machine.move_to(at(23, 10))
    manager = UserFactory(email="pm@example.org")
    StaffRoleFactory(user=manager)
    from workloads.usage.digest import send_weekly_digest

    assert send_weekly_digest() == 1
    body = mail.outbox[0].body
    assert "Training at risk" in body and org.name in body


def test_the_organizations_page_lists_its_training_in_bounded_queries(week_of_training, member_client, org):
    with CaptureQueriesContext(connection) as one:
        page = member_client.get(f"/orgs/{org.slug}/usage/")
    assert page.status_code == 200
    [row] = page.context["training"]
    assert row.finish.at_risk and row.tokens == 546 * BATCH * SEQ
    for n in range(3):
        other = WorkloadFactory(organization=org, allocation=ActiveAllocationFactory(organization=org))
        run = run_for(workload=other, name="main", sequence_length=SEQ)
        record_points(run=run, points=steps(1, 5, start=at(18, n)))
    with CaptureQueriesContext(connection) as four:
        page = member_client.get(f"/orgs/{org.slug}/usage/")
    assert len(page.context["training"]) == 4
    assert len(four) == len(one), [q["sql"][:100] for q in four.captured_queries]


def test_goodput_never_splits_more_than_the_held_time(org, p5_workload):
    """Two runs of one workload training side by side, and steps longer than an hour: the parts still sum to the
    held hours, the runs' work shared in proportion."""
    allocation = p5_workload.allocation
    allocation.starts_on, allocation.ends_on = date(2026, 11, 1), date(2026, 12, 31)
    allocation.save()
    for name in ("a", "b"):
        run = run_for(workload=p5_workload, name=name, sequence_length=SEQ)
        # 60 iterations of 2 h each (one a line), Monday to Saturday.
        record_points(run=run, points=steps(1, 60, start=at(16, 0), seconds=7200.0))
    figures = week_goodput([p5_workload], week=WEEK, now=at(30, 0))[p5_workload.pk]
    parts = figures.down + figures.no_job + figures.startup + figures.lost + figures.skipped + figures.no_progress
    assert parts + figures.productive == pytest.approx(figures.held)
    assert figures.productive <= figures.held - figures.down
